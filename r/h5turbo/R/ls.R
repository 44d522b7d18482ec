h5t_ls <- function(file, recursive = TRUE) {
    file <- .check_file(file)
    depth <- if (isTRUE(recursive)) .Machine$integer.max
             else if (isFALSE(recursive)) 1L
             else if (is.numeric(recursive) && length(recursive) == 1L && !is.na(recursive) && recursive >= 1)
                 as.integer(min(recursive, .Machine$integer.max))
             else .raise("recursive must be TRUE, FALSE or a depth of at least 1")
    rows <- .h5call(C_ls, file, "/", depth)
    df <- data.frame(rows, stringsAsFactors = FALSE)
    attr(df, "row.names") <- seq_len(nrow(df)) - 1L   # rhdf5's row names: 0, 1, ...
    df
}

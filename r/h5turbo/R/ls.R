h5t_ls <- function(file, recursive = TRUE) {
    file <- .check_file(file)
    # rhdf5's depths: TRUE or a negative number, every level; FALSE or 1, the root's members
    depth <- if (isTRUE(recursive)) .Machine$integer.max
             else if (isFALSE(recursive)) 1L
             else if (is.numeric(recursive) && length(recursive) == 1L && !is.na(recursive) && recursive < 0)
                 .Machine$integer.max
             else if (is.numeric(recursive) && length(recursive) == 1L && !is.na(recursive) && recursive >= 1)
                 as.integer(min(recursive, .Machine$integer.max))
             else .raise("recursive must be TRUE, FALSE, a depth of at least 1 or a negative number (every level)")
    rows <- .h5call(C_ls, file, "/", depth)
    df <- data.frame(rows, stringsAsFactors = FALSE)
    attr(df, "row.names") <- seq_len(nrow(df)) - 1L   # rhdf5's row names: 0, 1, ...
    df
}

h5t_ls <- function(file, recursive = TRUE) {
    file <- .check_file(file)
    depth <- if (isTRUE(recursive)) .Machine$integer.max
             else if (isFALSE(recursive)) 1L
             else if (is.numeric(recursive) && length(recursive) == 1L && recursive >= 1)
                 as.integer(min(recursive, .Machine$integer.max))
             else .raise("recursive must be TRUE, FALSE or a depth of at least 1")
    rows <- .h5call(C_ls, file, "/", depth)
    df <- data.frame(rows, stringsAsFactors = FALSE)
    if (nrow(df) > 0L) rownames(df) <- as.character(seq_len(nrow(df)) - 1L)
    df
}

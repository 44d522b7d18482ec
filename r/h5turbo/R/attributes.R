# Attributes in rhdf5's order (by name), a value per attribute; one that cannot be read
# gives NA with a warning, as rhdf5 does. bit64conversion as for h5t_read (rhdf5's
# h5readAttributes passes it on to H5Aread).
h5t_readAttributes <- function(file, name, bit64conversion = c("int", "double")) {
    file <- .check_file(file)
    name <- .check_name(name)
    bit64conversion <- match.arg(bit64conversion)
    attrs <- .h5call(C_attributes, file, name, if (bit64conversion == "double") 2L else 0L)
    for (k in seq_along(attrs)) {
        a <- attrs[[k]]
        if (inherits(a, "h5turbo_failure")) {
            warning(sprintf("h5turbo: '%s', object '%s', attribute '%s': %s", file, name,
                            names(attrs)[k], as.character(a)), call. = FALSE)
            attrs[k] <- list(NA)
        } else if (is.list(a)) {
            attrs[[k]] <- .finish(a, TRUE, name)
        } else if (!is.null(attr(a, "h5turbo_overflow"))) {
            attrs[[k]] <- .finish(a, TRUE, paste0(name, "@", names(attrs)[k]))
        }
    }
    if (length(attrs) == 0L) return(list())
    # by their bytes; a name that is not UTF-8 (Latin-1) sorts as bytes
    key <- names(attrs)
    bad <- !validUTF8(key)
    Encoding(key[bad]) <- "bytes"
    attrs[order(key, method = "radix")]
}

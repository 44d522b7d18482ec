# Calls into the C glue. A failure comes back as a value (class "h5turbo_failure"),
# never as a longjmp out of C, and is raised here as an R condition whose message
# names the file, the object and the problem.

.error_kinds <- c("format", "unsupported", "not_found", "io", "invalid", "closed", "internal", "out_of_memory")

.raise <- function(message, code = 5L, file = NULL, name = NULL, call = sys.call(-1L)) {
    # useBytes: a name need not be valid in the locale (Latin-1 bytes)
    if (!is.null(file) && !grepl(basename(file), message, fixed = TRUE, useBytes = TRUE)) {
        where <- if (is.null(name)) sprintf("'%s'", file) else sprintf("'%s', object '%s'", file, name)
        message <- sprintf("%s: %s", where, message)
    } else if (!is.null(name) && !grepl(name, message, fixed = TRUE, useBytes = TRUE)) {
        message <- sprintf("object '%s': %s", name, message)
    }
    kind <- .error_kinds[code]
    if (is.na(kind)) kind <- "internal"
    cond <- structure(
        class = c(paste0("h5turbo_error_", kind), "h5turbo_error", "error", "condition"),
        list(message = paste("h5turbo:", message), call = call, code = code, file = file, object = name))
    stop(cond)
}

# .Call with the file and object names kept for the error message.
.h5call <- function(fun, file, name, ...) {
    result <- .allocating(.Call(fun, file, name, ...), file, name, call = sys.call(-1L))
    if (inherits(result, "h5turbo_failure"))
        .raise(as.character(result), attr(result, "code"), file, name, call = sys.call(-1L))
    result
}

# R's own failures to allocate what a file's sizes ask for (a shape claiming 2^32
# compound elements: "cannot allocate vector of size 592.0 Gb"): an h5turbo error
# naming the file and the object, as every other failure.
.allocating <- function(expr, file, name, call = sys.call(-1L)) {
    withCallingHandlers(expr, error = function(e) {
        if (!inherits(e, "h5turbo_error") && grepl(.ALLOCATION_FAILURES, conditionMessage(e)))
            .raise(sprintf("the values do not fit in memory (%s)", conditionMessage(e)), 8L, file, name, call)
    })
}
.ALLOCATION_FAILURES <- "cannot allocate (vector|memory)|vector size specified is too large|long vectors not supported"

.check_file <- function(file) {
    if (!is.character(file) || length(file) != 1L || is.na(file))
        .raise("file must be a single path", call = sys.call(-1L))
    file <- path.expand(file)
    if (!file.exists(file))
        .raise("no such file", code = 4L, file = file, call = sys.call(-1L))
    file
}

.check_name <- function(name) {
    if (!is.character(name) || length(name) != 1L || is.na(name))
        .raise("name must be a single object path, such as \"/group/dataset\"", call = sys.call(-1L))
    name
}

# A TRUE/FALSE argument: anything else (NA, "yes", a vector) is refused by name, not
# taken as FALSE.
.check_flag <- function(value, what) {
    if (!is.logical(value) || length(value) != 1L || is.na(value))
        .raise(paste(what, "must be TRUE or FALSE"), call = sys.call(-1L))
    value
}

# threads = NULL (or 0): the library's default (the H5TURBO_THREADS variable, else all cores).
.threads <- function(threads) {
    if (is.null(threads)) return(0L)
    if (!is.numeric(threads) || length(threads) != 1L || is.na(threads) || threads < 0 ||
        threads > .Machine$integer.max || threads != round(threads))
        .raise("threads must be NULL or a positive whole number", call = sys.call(-1L))
    as.integer(threads)
}

#' @noRd
h5t_version <- function() .Call(C_version)

# h5t_read: rhdf5::h5read's values, types and dimensions. The HDF5 dataset of shape
# (d1, ..., dk) (row-major) arrives as the R array of dim (dk, ..., d1) (column-major):
# the same bytes, dimensions reversed, as rhdf5 gives them. `index` is in R's
# orientation: index[[j]] selects along R dimension j, HDF5 axis k - j (0-based).

h5t_read <- function(file, name, index = NULL, threads = NULL,
                     bit64conversion = c("int", "double"), compoundAsDataFrame = TRUE,
                     drop = FALSE) {
    file <- .check_file(file)
    name <- .check_name(name)
    bit64conversion <- match.arg(bit64conversion)
    compoundAsDataFrame <- .check_flag(compoundAsDataFrame, "compoundAsDataFrame")
    drop <- .check_flag(drop, "drop")
    threads <- .threads(threads)
    flags <- if (bit64conversion == "double") 2L else 0L
    if (is.list(index)) index <- .eval_index(index, parent.frame())
    # a group is asked after the read fails (listing its parent for every dataset read
    # made reading a group of n datasets cost n^2)
    group <- FALSE
    x <- tryCatch(.read_values(file, name, index, threads, flags, compoundAsDataFrame),
                  h5turbo_error_invalid = function(e) {
                      if (!grepl("not a dataset", conditionMessage(e), fixed = TRUE) || !.is_group(file, name)) stop(e)
                      group <<- TRUE
                  })
    if (group) {
        if (!is.null(index)) .raise("index selects elements of a dataset, not of a group", file = file, name = name)
        return(.read_group(file, name, threads, bit64conversion, compoundAsDataFrame, drop))
    }
    # rhdf5's drop: the values as a vector, without dimensions
    if (drop && !is.data.frame(x) && !is.null(dim(x))) dim(x) <- NULL
    x
}

.is_group <- function(file, name) {
    if (name %in% c("/", "")) return(TRUE)
    parent <- dirname(sub("/+$", "", name))
    if (parent == ".") parent <- "/"
    otype <- tryCatch(.members(file, parent)[basename(name)], h5turbo_error = function(e) NA)
    identical(unname(otype), "H5I_GROUP")
}

# A group read as rhdf5's h5read reads one: a list of its members by name, datasets
# read, groups as lists of theirs (what h5ls lists; links that lead nowhere left out).
.read_group <- function(file, name, threads, bit64conversion, compoundAsDataFrame, drop) {
    members <- .members(file, name)
    values <- lapply(names(members), function(member) {
        path <- if (name %in% c("/", "")) paste0("/", member) else paste0(sub("/+$", "", name), "/", member)
        switch(members[[member]],
               H5I_GROUP = .read_group(file, path, threads, bit64conversion, compoundAsDataFrame, drop),
               H5I_DATASET = h5t_read(file, path, threads = threads, bit64conversion = bit64conversion,
                                      compoundAsDataFrame = compoundAsDataFrame, drop = drop),
               NULL)
    })
    names(values) <- names(members)
    values[!vapply(values, is.null, logical(1))]
}

# rhdf5's h5read evaluates index elements that are unevaluated calls or names
# (index = list(quote(1:10), NULL), as code built for h5read passes them); h5t_read
# does too, in the caller's frame, where they were written.
.eval_index <- function(index, env) {
    for (j in seq_along(index))
        if (is.call(index[[j]]) || is.name(index[[j]])) index[j] <- list(eval(index[[j]], env))
    index
}

# h5t_read's reading, its arguments checked; `info` (C_info's answer) when the caller
# already has it (the DelayedArray seed), so an indexed read does not ask again.
.read_values <- function(file, name, index, threads, flags, compoundAsDataFrame, info = NULL) {
    if (is.null(index)) {
        x <- .h5call(C_read, file, name, NULL, threads, flags)
    } else {
        if (is.null(info)) info <- .h5call(C_info, file, name)
        x <- .read_index(file, name, info, index, threads, flags)
    }
    x <- .finish(x, compoundAsDataFrame, name)
    if (is.character(x)) x <- .strings_na(x, file, name)
    x
}

# rhdf5 writes a character NA as the text "NA" and marks the dataset with the
# attribute as.na = 1; it reads those back as NA, and so does h5t_read.
.strings_na <- function(x, file, name) {
    if (!any(x == "NA", na.rm = TRUE)) return(x)   # the attributes are read only when it matters
    attrs <- suppressWarnings(h5t_readAttributes(file, name))
    marked <- attrs[["as.na"]]
    if (length(marked) == 1L && !is.na(marked) && as.logical(marked)) x[!is.na(x) & x == "NA"] <- NA_character_
    x
}

# Reads the positions `index` asks for: along each HDF5 axis the sorted unique
# positions become one strided hyperslab (or their bounding range); along the first
# HDF5 axis (R's last dimension) they become blocks that share no chunk, so scattered
# rows do not pull in everything between them, and along the others too where their
# range would be far more than they are (each combination of blocks then read alone:
# 3 scattered rows of a 3000 x 4000 matrix read its whole 12e6 values, 20x rhdf5's
# time). R's `[` then gives the user's order and repeats.
.read_index <- function(file, name, info, index, threads, flags, piecewise = TRUE) {
    rank <- info$rank
    if (rank < 1L)
        .raise("index given for a dataset without dimensions", file = file, name = name)
    if (!is.list(index) || length(index) != rank)
        .raise(sprintf("index must be a list with one element (NULL or positions) per dimension: %d",
                       rank), file = file, name = name)
    rdims <- rev(info$dims)
    wanted <- vector("list", rank)
    for (j in seq_len(rank)) {
        idx <- index[[j]]
        if (is.null(idx)) next
        if (!is.numeric(idx) || anyNA(idx) || any(idx < 1) || any(idx > rdims[j]) || any(idx != floor(idx)))
            .raise(sprintf("index[[%d]] must hold whole numbers from 1 to %.0f", j, rdims[j]),
                   file = file, name = name)
        wanted[[j]] <- as.numeric(idx)
    }
    if (piecewise) {
        x <- .read_piecewise(file, name, info, wanted, threads, flags)
        if (!is.null(x)) return(x)
    }
    chunk_of <- function(axis) if (is.null(info$chunk)) 1 else info$chunk[axis + 1L]
    plans <- lapply(seq_len(rank), function(j) {
        axis <- rank - j
        if (is.null(wanted[[j]])) return(list(start = 0, count = rdims[j], stride = 1, read = NULL))
        u <- sort(unique(wanted[[j]]))
        if (axis == 0L) return(.plan_blocks(u, chunk_of(axis)))
        p <- .plan_axis(u)
        apart <- .plan_blocks(u, chunk_of(axis))
        # far more read than wanted: blocks, each combination read alone (.read_split)
        if (length(apart$blocks) > 1L && p$count > 4 * length(u)) apart else p
    })
    plans <- .cap_split(plans, rank)
    split <- .split_dims(plans, rank)
    if (length(split)) {
        done <- .read_split(file, name, plans, split, rank, threads, flags)
        x <- done$x
        plans <- done$plans  # what was read (the range, where blocks could not be)
    } else {
        x <- .read_plans(file, name, plans, rank, threads, flags)
    }
    # positions read along each R dimension, then the user's order and repeats
    got <- lapply(seq_len(rank), function(j) {
        p <- plans[[j]]
        if (!is.null(p$blocks)) .block_positions(p) else .positions(p)
    })
    .in_users_order(x, wanted, got)
}

# `x`, read at positions `got` along each R dimension, at the positions `wanted` (the
# user's order and repeats; NULL: all of a dimension, as read).
.in_users_order <- function(x, wanted, got) {
    subs <- lapply(seq_along(wanted), function(j) {
        if (is.null(wanted[[j]])) return(NULL)
        m <- match(wanted[[j]], got[[j]])
        if (length(m) == length(got[[j]]) && all(m == seq_along(m))) NULL else m
    })
    if (all(vapply(subs, is.null, TRUE))) return(x)
    .subset_read(x, subs)
}

.positions <- function(p) if (p$count == 0) numeric(0) else p$start + 1 + (seq_len(p$count) - 1) * p$stride

# Scattered positions are read over ranges that hold them (one range where they are
# closer than a chunk): 250 random cells of a 5000 x 30000 matrix read it whole, 600 MB
# for a 29 MB result (rhdf5 held 64 MB more than its result). Where the ranges would
# hold more than .PIECEWISE_ELEMENTS and 4 times the positions, the read goes whole
# chunk rows of HDF5 axis 0 (R's last dimension) at a time, about .PIECE_ELEMENTS
# values, each piece cut to its positions before the next is read: memory of the result
# plus one piece (988 -> 536 MB peak), each chunk still decoded once. It costs time: a
# fresh R session took 2.4-3.2 s where the single read took 1.0-1.4 s (rhdf5 2.5-3.3 s),
# the pieces' R vectors being allocated and collected one by one. NULL where this does not apply (then the whole read is planned as one).
.PIECEWISE_ELEMENTS <- 2^22
.PIECE_ELEMENTS <- 2^22
.read_piecewise <- function(file, name, info, wanted, threads, flags) {
    rank <- info$rank
    if (rank < 2L || is.null(info$chunk)) return(NULL)
    rdims <- rev(info$dims)
    u <- lapply(seq_len(rank), function(j) if (is.null(wanted[[j]])) NULL else sort(unique(wanted[[j]])))
    if (any(vapply(u, function(v) !is.null(v) && length(v) == 0L, TRUE))) return(NULL)  # nothing to read
    kept <- vapply(seq_len(rank), function(j) if (is.null(u[[j]])) rdims[j] else length(u[[j]]), 0)
    spanned <- vapply(seq_len(rank), function(j) if (is.null(u[[j]])) rdims[j] else diff(range(u[[j]])) + 1, 0)
    if (prod(spanned) <= max(.PIECEWISE_ELEMENTS, 4 * prod(kept))) return(NULL)
    rows <- if (is.null(u[[rank]])) seq_len(rdims[rank]) else u[[rank]]
    # whole chunk rows, as many as make a piece of about .PIECE_ELEMENTS read
    chunk0 <- max(info$chunk[1L], 1)
    per <- chunk0 * max(1, floor(.PIECE_ELEMENTS / (prod(spanned[-rank]) * chunk0)))
    groups <- split(rows, (rows - 1) %/% per)
    if (length(groups) < 2L) return(NULL)
    pieces <- vector("list", length(groups))
    for (g in seq_along(groups)) {
        index <- u
        index[[rank]] <- groups[[g]]
        piece <- .read_index(file, name, info, index, threads, flags, piecewise = FALSE)
        if (!is.atomic(piece) || !identical(names(attributes(piece)), "dim")) return(NULL)
        pieces[[g]] <- piece
    }
    # R arrays are column-major: pieces along the last dimension follow one another
    x <- array(unlist(pieces, use.names = FALSE), dim = c(kept[-rank], length(rows)))
    .in_users_order(x, wanted, u)
}

# the 1-based positions of a plan's blocks, in order
.block_positions <- function(p) unlist(lapply(p$blocks, .positions))

# One read of `plans` (per R dimension: a hyperslab, or for R's last one blocks
# stacked along HDF5 axis 0).
.read_plans <- function(file, name, plans, rank, threads, flags) {
    first <- plans[[rank]]
    blocks <- if (!is.null(first$blocks)) first$blocks else list(first)
    sel <- lapply(blocks, function(b) {
        st <- ct <- sd <- numeric(rank)
        for (axis in 0:(rank - 1L)) {
            p <- if (axis == 0L) b else plans[[rank - axis]]
            st[axis + 1L] <- p$start; ct[axis + 1L] <- p$count; sd[axis + 1L] <- p$stride
        }
        c(st, ct, sd)
    })
    .h5call(C_read, file, name, sel, threads, flags)
}

# R dimensions other than the last whose positions are read in blocks
.split_dims <- function(plans, rank)
    which(vapply(seq_len(rank - 1L), function(j) !is.null(plans[[j]]$blocks), TRUE))

# Each combination of the split dimensions' blocks is one read (.read_split): scattered
# positions on several dimensions would make their product of calls (10,000 for 100
# blocks on two). Past .MAX_SPLIT_READS, the dimension with the most blocks is read over
# its range instead, until the product fits.
.MAX_SPLIT_READS <- 256
.cap_split <- function(plans, rank) {
    repeat {
        split <- .split_dims(plans, rank)
        blocks <- vapply(split, function(j) length(plans[[j]]$blocks), 0)
        if (prod(blocks) <= .MAX_SPLIT_READS) return(plans)
        j <- split[which.max(blocks)]
        plans[[j]] <- .plan_axis(.block_positions(plans[[j]]))
    }
}

# `plans` whose R dimensions `split` are blocks too: each combination of their blocks
# read alone and placed in one array of the blocks' positions. Plain arrays only
# (numbers, logicals, strings); other values (data frames of compounds, lists, classed
# or attributed vectors) are read over the blocks' whole range instead.
.read_split <- function(file, name, plans, split, rank, threads, flags) {
    whole <- function() {
        for (j in split) plans[[j]] <- .plan_axis(.block_positions(plans[[j]]))
        list(x = .read_plans(file, name, plans, rank, threads, flags), plans = plans)
    }
    counts <- lapply(split, function(j) vapply(plans[[j]]$blocks, function(b) b$count, 0))
    combos <- as.matrix(expand.grid(lapply(counts, seq_along)))
    out <- NULL
    for (k in seq_len(nrow(combos))) {
        part <- plans
        at <- rep(list(quote(expr = )), rank)
        for (s in seq_along(split)) {
            j <- split[s]
            b <- combos[k, s]
            part[[j]] <- plans[[j]]$blocks[[b]]
            at[[j]] <- sum(counts[[s]][seq_len(b - 1L)]) + seq_len(counts[[s]][b])
        }
        x <- .read_plans(file, name, part, rank, threads, flags)
        if (!is.atomic(x) || !identical(names(attributes(x)), "dim") || length(dim(x)) != rank) return(whole())
        if (is.null(out)) {
            shape <- dim(x)
            for (s in seq_along(split)) shape[split[s]] <- sum(counts[[s]])
            out <- array(x[NA_integer_], dim = shape)
        }
        out <- do.call(`[<-`, c(list(out), at, list(value = x)))
    }
    list(x = out, plans = plans)
}

# sorted unique 1-based positions -> one hyperslab (0-based start, count, stride)
.plan_axis <- function(u) {
    n <- length(u)
    if (n == 0L) return(list(start = 0, count = 0, stride = 1))
    if (n == 1L) return(list(start = u - 1, count = 1, stride = 1))
    step <- u[2L] - u[1L]
    if (all(diff(u) == step)) return(list(start = u[1L] - 1, count = n, stride = step))
    list(start = u[1L] - 1, count = u[n] - u[1L] + 1, stride = 1)
}

# along the first HDF5 axis: groups of positions closer than a chunk, each a hyperslab
.plan_blocks <- function(u, chunk0) {
    if (length(u) == 0L) return(list(blocks = list(list(start = 0, count = 0, stride = 1))))
    breaks <- which(diff(u) > max(chunk0, 1))
    ends <- c(breaks, length(u))
    starts <- c(1L, breaks + 1L)
    list(blocks = Map(function(a, b) .plan_axis(u[a:b]), starts, ends))
}

.subset_read <- function(x, subs) {
    args <- lapply(subs, function(s) if (is.null(s)) quote(expr = ) else s)
    pick <- function(v) {
        if (is.null(dim(v))) return(v)
        # opaque bytes and array types: leading dimensions, kept whole
        extra <- length(dim(v)) - length(args)
        a <- c(rep(list(quote(expr = )), extra), args)
        y <- do.call(`[`, c(list(v), a, list(drop = FALSE)))
        attr(y, "h5turbo_array") <- attr(v, "h5turbo_array")
        y
    }
    if (!is.null(attr(x, "h5turbo_sequences"))) {
        # variable-length sequences: a list array, subset as an array
        y <- pick(x)
        attr(y, "h5turbo_sequences") <- TRUE
        return(y)
    }
    if (is.list(x) && !is.data.frame(x)) {
        at <- attributes(x)
        x <- lapply(x, function(col) if (is.list(col)) .subset_read(col, subs) else pick(col))
        attributes(x) <- at
        return(x)
    }
    pick(x)
}

# Compounds to data.frames (nested ones too), rhdf5's overflow warning.
.finish <- function(x, compoundAsDataFrame, name) {
    lost <- attr(x, "h5turbo_overflow")
    if (!is.null(lost)) {
        attr(x, "h5turbo_overflow") <- NULL
        if (bitwAnd(lost, 1L))
            warning(sprintf(paste0("h5turbo: NAs produced by integer overflow while converting '%s' ",
                                   "(64-bit or unsigned 32-bit integers) to R's 32-bit integers; ",
                                   "choose bit64conversion = 'double' to avoid data loss"), name),
                    call. = FALSE)
        # rhdf5 warns too: a double keeps 53 significant bits
        if (bitwAnd(lost, 2L))
            warning(sprintf(paste0("h5turbo: integer precision lost while converting 64-bit integers ",
                                   "of '%s' to double (values past 2^53 are rounded)"), name),
                    call. = FALSE)
    }
    if (!is.null(attr(x, "h5turbo_sequences"))) {
        attr(x, "h5turbo_sequences") <- NULL   # a list of vectors: no data.frame
        if (compoundAsDataFrame) x[] <- lapply(x, function(e) if (is.list(e)) .as_data_frame(e) else e)
        return(x)
    }
    if (is.list(x) && !is.data.frame(x) && compoundAsDataFrame) x <- .as_data_frame(x)
    if (is.list(x)) x <- .finish_sequence_columns(x, compoundAsDataFrame)
    x
}

# A one-dimensional compound's member of a one-dimensional array type (marked by the C
# side): a matrix column in a data.frame, one row per element (rhdf5 gives NA there).
# Raw bytes keep the form of opaque members.
.is_vector_member <- function(col) {
    !is.null(attr(col, "h5turbo_array")) && length(dim(col)) == 2L && is.atomic(col) &&
        !is.factor(col) && !is.raw(col)
}

# A compound member of variable-length sequences (marked h5turbo_sequences): a list
# column, one vector (a data.frame for a compound base) per element.
.is_compound <- function(col) is.list(col) && is.null(attr(col, "h5turbo_sequences"))

.finish_sequence_columns <- function(cols, compoundAsDataFrame) {
    at <- attributes(cols)
    cols <- lapply(cols, function(col) {
        if (.is_compound(col)) return(.finish_sequence_columns(col, compoundAsDataFrame))
        attr(col, "h5turbo_array") <- NULL
        if (!is.list(col)) return(col)
        attr(col, "h5turbo_sequences") <- NULL
        if (compoundAsDataFrame) col[] <- lapply(col, function(e) if (is.list(e)) .as_data_frame(e) else e)
        col
    })
    attributes(cols) <- at
    cols
}

.as_data_frame <- function(cols) {
    one_dim <- all(vapply(cols, function(col) .is_compound(col) || length(dim(col)) <= 1L ||
                              .is_vector_member(col) || (is.raw(col) && length(dim(col)) == 2L), TRUE))
    # rhdf5 also gives a list for multi-dimensional compounds (and for members of
    # arrays of several dimensions, as with compoundAsDataFrame = FALSE)
    if (!one_dim) return(cols)
    cols <- lapply(cols, function(col) {
        if (.is_compound(col)) return(.as_data_frame(col))
        if (.is_vector_member(col)) return(t(col))
        col
    })
    n <- if (length(cols) == 0L) 0L else NROW(if (is.raw(cols[[1L]]) && length(dim(cols[[1L]])) == 2L)
                                                 t(cols[[1L]]) else cols[[1L]])
    structure(cols, class = "data.frame", row.names = .set_row_names(n))
}

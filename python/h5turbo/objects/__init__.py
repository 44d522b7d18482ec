"""The read-only object model, as h5py's read side: files, groups, datasets,
attributes, selections, references, value types and filters. Everything here reads
through the native module; nothing needs h5py."""

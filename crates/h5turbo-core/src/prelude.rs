//! The public API of the core: what a binding (Python, C, R) needs, and nothing
//! of the format layer's internals. `use h5turbo_core::prelude::*;`
//!
//! ```no_run
//! use h5turbo_core::prelude::*;
//! # fn main() -> h5turbo_core::Result<()> {
//! let file = File::open(std::path::Path::new("data.h5"))?;
//! let object = file.get("/matrix")?;
//! let dataset = object.dataset()?;
//! let shape = dataset.shape().to_vec();
//! let selection: Vec<AxisSelection> = shape.iter().map(|&n| AxisSelection::all(n)).collect();
//! let itemsize = dataset.datatype.numpy_dtype()?.itemsize() as usize;
//! let mut out = vec![0u8; itemsize * shape.iter().product::<u64>() as usize];
//! object.read_numpy(&selection, &mut out, resolve_threads(0))?;
//! # Ok(()) }
//! ```

pub use crate::engine::pool::resolve_threads;
pub use crate::engine::reduce::{ElementKind, NumberClass, ReduceOp, Reduced};
pub use crate::engine::AxisSelection;
pub use crate::error::{Error, ErrorKind, Result, ResultExt};
pub use crate::formats::fast5::{self, Fast5Index, ReadGroups};
pub use crate::file::{AttributeValue, Dataset, File, LayoutKind, Object, ObjectKind};
pub use crate::format::dataspace::{Dataspace, DataspaceKind};
pub use crate::format::datatype::{
    ByteOrder, CharSet, CompoundMember, Datatype, DatatypeClass, EnumMember, FloatLayout, NumpyDtype, ReferenceKind,
    StringPadding, VlenKind,
};
pub use crate::format::filter_pipeline::{FilterInfo, FilterPipeline};
pub use crate::format::links::{Link, LinkTarget};
pub use crate::format::values::VlenValue;
pub use crate::io::{read_ahead, FileSource, MemSource, ReadAt};

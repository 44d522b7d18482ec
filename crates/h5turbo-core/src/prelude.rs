//! The public API of the core: what a binding (Python, C, R) needs, and nothing
//! of the format layer's internals. `use h5turbo_core::prelude::*;`
//!
//! ```
//! use h5turbo_core::prelude::*;
//! # fn main() -> h5turbo_core::Result<()> {
//! let file = File::open(std::path::Path::new("tests/data/dense_storage.h5"))?;
//! let object = file.get("/plain/hard_01")?;
//! assert_eq!(object.kind(), ObjectKind::Dataset);
//! let dataset = object.dataset()?;
//! assert_eq!(dataset.shape(), &[4]);
//!
//! // Read elements 1..4 (a selection per axis) into a caller's buffer, all cores.
//! let selection = [AxisSelection::Range { start: 1, count: 3, step: 1 }];
//! let mut out = [0u8; 3 * 4];
//! object.read_numpy(&selection, &mut out, resolve_threads(0))?;
//! let values: Vec<i32> = out.chunks(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect();
//! assert_eq!(values, [1, 2, 3]);
//!
//! // Reductions straight from the file, chunk by chunk.
//! let all = [AxisSelection::all(4)];
//! let sum = dataset.reduce(&file, &all, &[true], ReduceOp::SumInt, 2)?;
//! assert_eq!(sum, Reduced::Int(vec![6]));
//!
//! // Groups, attributes, the filter registry; errors name the file and the object.
//! assert_eq!(file.get("/attr_holder")?.attribute_names()?.len(), 31);
//! assert_eq!(filter_registry::filter_name(32015), "zstd");
//! let missing = file.get("/no/such/object").err().map(|e| e.kind());
//! assert_eq!(missing, Some(ErrorKind::NotFound));
//! # Ok(()) }
//! ```

pub use crate::engine::limit::{codec_limit, fast5_limit};
pub use crate::engine::pool::{default_threads, on_threads, resolve_threads};
pub use crate::engine::write::{encode_chunks, encode_chunks_into, ChunkedArray};
pub use crate::filters::encode::{EncodePipeline, FilterSpec};
pub use crate::engine::reduce::{half_to_f32, ElementKind, NumberClass, ReduceOp, Reduced};
pub use crate::engine::AxisSelection;
pub use crate::buffer::{vec_with_capacity, zeroed, zeroed_elements, zeroed_vec};
pub use crate::error::{Error, ErrorKind, Result, ResultExt};
pub use crate::formats::fast5::{self, Fast5Index, ReadGroups};
pub use crate::file::{AttributeValue, ChunkInfo, Dataset, File, LayoutKind, Object, ObjectKind, Storage};
pub use crate::filters::registry::{self as filter_registry, FilterKind};
pub use crate::format::dataspace::{Dataspace, DataspaceKind};
pub use crate::format::datatype::{
    ByteOrder, CharSet, CompoundMember, Datatype, DatatypeClass, EnumMember, FloatLayout, ReferenceKind,
    StringPadding, VlenKind,
};
pub use crate::format::filter_pipeline::{FilterInfo, FilterPipeline};
pub use crate::format::links::{Link, LinkTarget};
pub use crate::format::names::{self, has_stray_bytes, name_from_bytes, stored_bytes};
pub use crate::convert::columns::{columns_from_values, Column, Strings};
pub use crate::convert::numpy_dtype::{has_objects, memory_layout, vlen_element_dtype, DtypeMetadata, NumpyDtype};
pub use crate::format::reference::{self, Selection as RegionSelection};
pub use crate::format::vds::{Mapping as VirtualMapping, SourceFile as VirtualSourceFile};
pub use crate::convert::values::VlenValue;
pub use crate::io::{read_ahead, FileHints, FileSource, FileVersion, MemSource, ReadAt};

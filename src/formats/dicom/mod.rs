//! DICOM Part 10 files (PS3.10), datasets in implicit VR little endian, explicit VR little and
//! big endian, deflated explicit VR little endian, with encapsulated pixel data (PS3.5).
//!
//! - `source`: the input cut into one record in bounded memory (bulk values past a budget
//!   left out), and the reader's view of that record;
//! - [`lex`]: the lexer (meta group, transfer syntax, sequences, items, fragments, limits);
//! - [`read`]: a record into a [`read::Document`] (values in `Phi`);
//! - [`codes`]: PS3.16 coding scheme designators and concepts (generated, see PROVENANCE.md);
//! - [`vocab`]: the Clean options' words and units (generated, see PROVENANCE.md);
//! - [`dict`]: the data dictionary and the standard's tables (generated into `tables.rs` by
//!   `tools/gen_dicom_tables.py`, see PROVENANCE.md);
//! - [`validate`]: file meta, encoding, VR syntax and length, VM, the IOD's modules;
//! - [`write`]: the PS3.18 JSON model, the value-free summary, Part 10 bytes;
//! - `codec`: [`Dicom`], the registered format.
//!
//! What it does not do: decode pixel data, or convert. A deflated dataset is inflated by the
//! splitter (`source`) and deflated again by the Part 10 writer.

pub mod charset;
mod codec;
pub mod dict;
pub mod lex;
pub mod read;
pub mod source;
#[rustfmt::skip]
#[allow(clippy::all)]
pub mod codes;
#[rustfmt::skip]
#[allow(clippy::all)]
mod tables;
pub mod validate;
#[rustfmt::skip]
#[allow(clippy::all)]
pub mod vocab;
pub mod write;

pub use codec::{Dicom, Envelope};
pub use read::Document;

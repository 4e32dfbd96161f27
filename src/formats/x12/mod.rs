//! ASC X12 (HIPAA 5010, and 4010 where pyx12 has the maps): interchanges, functional groups,
//! transaction sets and TA1 acknowledgments.
//!
//! - [`split`]: a stream of interchanges into records (one per transaction set, and the
//!   envelope segments), in bounded memory;
//! - [`read`]: the ISA read by position, a record into a [`read::Document`] (values in `Phi`);
//! - [`validate`]: the envelope and the implementation guides ([`guide`], the tables generated
//!   into `tables.rs` by `tools/gen_x12_tables.py`);
//! - [`write`]: the JSON model, the canonical form, the value-free summary;
//! - `codec`: [`X12`], the registered format, and the stream tracker (counts and control
//!   numbers of GE and IEA).
//!
//! - [`ack`]: the 999 and TA1 acknowledgments (`ack`).
//!
//! What it does not do: conversion.

pub mod ack;
mod codec;
pub mod guide;
pub mod read;
pub mod split;
#[rustfmt::skip]
mod tables;
pub mod validate;
pub mod write;

pub use codec::{Stream, X12};
pub use read::Document;

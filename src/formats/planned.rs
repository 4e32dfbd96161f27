//! Signatures of the formats phiward recognises but does not build yet (the registry's
//! `planned` lines): an input that matches one is answered `CLI_FORMAT_UNSUPPORTED` rather than
//! `CLI_FORMAT_UNDETECTED`. When a format lands, its signature moves into its codec.
//!
//! Each takes the first bytes after a BOM and white space (`body`) and as they are (`raw`).
//!
//! None at present: NCPDP SCRIPT, the last planned format, is built (`formats::ncpdp_script`).

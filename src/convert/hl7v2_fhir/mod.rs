//! HL7 v2 to FHIR R4: one message in, one Bundle out, with value-free findings.
//!
//! Grounded in the HL7 V2-to-FHIR Implementation Guide (message, segment, data type and
//! vocabulary maps); the tables of what is mapped, and what is not, are in docs/convert.md.
//!
//! - [`read`]: the only file here that reads values (with the `Disclosure` lent by `ops`);
//! - [`datatypes`]: XPN, XAD, XTN, CX, EI, CWE, XCN, DTM, NM; [`vocab`]: the code maps;
//! - [`segments`]: MSH, PID, PD1, NK1, PV1, PV2, AL1, DG1, PR1, IN1, MRG;
//!   [`orders`]: ORC, OBR, OBX, NTE, SPM, RXA, RXR, RXO, SCH, AIS, TXA;
//! - [`tree`]: the JSON tree the resources are built in.
//!
//! Resource ids are UUIDs (and `fullUrl`s `urn:uuid:` UUIDs; every reference is one of them):
//! with a key (`--id-key-file`), an HMAC-SHA-256 of the resource type and its identifiers
//! (Patient: PID-3; Practitioner: XCN-1 and XCN-9; Location: the PL components) or, for resources
//! without identifiers, of MSH-10 and the segment position; without a key, a SHA-256 of MSH-10,
//! the resource type and the segment position only (never of a patient identifier). MSH-10 is
//! itself written to `Bundle.identifier`, so its digest discloses nothing the Bundle does not.
//!
//! Every produced Bundle is validated by phiward's FHIR validator; its findings are added.
//!
//! What it does not do: conformance validation of the v2 input (`phiward validate` does), or
//! messages in other versions than v2.x.

pub mod datatypes;
pub mod orders;
pub mod read;
pub mod segments;
pub mod tree;
pub mod vocab;

use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};
use zeroize::Zeroize;

use crate::diag::{Code, Diagnostic, Hl7Position, Location};
use crate::formats::fhir;
use crate::formats::hl7v2::parse::{Message, SegmentRef};
use crate::limits::Limits;
use crate::phi::Disclosure;

use super::{BundleType, Options};
use read::Reader;
use tree::{Obj, V};

/// Domain label of resource-id derivations.
pub const ID_DOMAIN: &str = "phiward/convert/resource-id/v1";

/// The message types this converter is built and tested for (MSH-9.1, MSH-9.2).
pub const SUPPORTED: &[(&str, &str)] = &[
    ("ADT", "A01"),
    ("ADT", "A02"),
    ("ADT", "A03"),
    ("ADT", "A04"),
    ("ADT", "A05"),
    ("ADT", "A06"),
    ("ADT", "A07"),
    ("ADT", "A08"),
    ("ADT", "A11"),
    ("ADT", "A13"),
    ("ADT", "A28"),
    ("ADT", "A31"),
    ("ADT", "A40"),
    ("ORU", "R01"),
    ("ORM", "O01"),
    ("OML", "O21"),
    ("VXU", "V04"),
    ("SIU", "S12"),
    ("SIU", "S13"),
    ("SIU", "S14"),
    ("SIU", "S15"),
    ("MDM", "T02"),
];

/// The result of converting one message.
pub struct Converted {
    /// The caller's prefix (see [`convert_after`]), then the Bundle (FHIR JSON, compact). Data
    /// channel only. After a spill, what was not spilled: the end of the Bundle.
    pub out: Vec<u8>,
    /// Where the Bundle starts in `out` (the length of the prefix).
    pub start: usize,
    /// True when the start of `out` (the prefix and the Bundle's first bytes) went to the
    /// spill (see [`convert_after`]).
    pub spilled: bool,
    /// Conversion findings, then the validator's findings on the Bundle.
    pub findings: Vec<Diagnostic>,
}

impl Converted {
    /// The Bundle (FHIR JSON, compact). Data channel only.
    pub fn bundle(&self) -> &[u8] {
        self.out.get(self.start..).unwrap_or_default()
    }
}

impl Drop for Converted {
    fn drop(&mut self) {
        crate::phi::wipe(&mut self.out);
    }
}

/// One Bundle entry.
pub(crate) struct Entry {
    ty: &'static str,
    id: String,
    res: Obj,
    /// Bytes that identify a shared resource (Practitioner, Location, Organization) in this
    /// message, for de-duplication; zeroized on drop.
    key: Vec<u8>,
    /// A resource not held: made again when written ([`Ctx::recipes`]).
    recipe: Option<u32>,
}

/// How to make an Observation again when the Bundle is written (a large message does not hold
/// its Observations: see [`Ctx::lazy`]): its OBX, the arguments it was made with, the NTE
/// segments that added notes to it, and the JSON values it writes.
pub(crate) struct Recipe<'m> {
    obx: SegmentRef<'m>,
    order: Option<usize>,
    /// The patient and encounter references and the report's effective time it was made with
    /// ([`Ctx::recipe_states`]).
    state: u32,
    pub(crate) notes: Vec<SegmentRef<'m>>,
    /// `None` when a number is not a JSON number (see `fhir::direct::count_checked`).
    values: Option<usize>,
}

/// The state an Observation is made in, besides its segment: `Ctx::patient`,
/// `Ctx::encounter` and the effective time of its report; wiped on drop.
pub(crate) struct RecipeState {
    patient: Option<String>,
    encounter: Option<String>,
    effective: Option<String>,
}

impl Drop for RecipeState {
    fn drop(&mut self) {
        for s in [&mut self.patient, &mut self.encounter, &mut self.effective].into_iter().flatten() {
            crate::phi::wipe_string(s);
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        crate::phi::wipe(&mut self.key);
    }
}

/// The conversion state of one message.
pub struct Ctx<'m> {
    /// Value access.
    pub r: Reader<'m>,
    /// Options.
    pub opts: &'m Options,
    findings: Vec<Diagnostic>,
    pub(crate) entries: Vec<Entry>,
    /// MSH-10 bytes (for ids), zeroized on drop.
    control: Vec<u8>,
    record: u64,
    /// [`Ctx::positional_prefix`] of this message.
    positional_prefix: Sha256,
    /// `urn:uuid:` reference of the Patient, when there is a PID.
    pub patient: Option<String>,
    /// Reference of the Encounter, when there is a PV1.
    pub encounter: Option<String>,
    /// MSH-9.1 and MSH-9.2.
    pub message_type: (String, String),
    /// The last timestamp [`Ctx::datetime`] wrote: its raw bytes, the `dateTime`, and whether it
    /// was reduced to the date (results repeat a time across their OBX-14, OBX-19 and OBR-7);
    /// wiped on drop.
    pub(crate) last_datetime: (Vec<u8>, String, bool),
    /// A large message (its Bundle is spilled): Observations are not held once made (their
    /// findings and shared resources are), but made again, one at a time, when the Bundle is
    /// written (see [`Recipe`]).
    pub(crate) lazy: bool,
    pub(crate) recipes: Vec<Recipe<'m>>,
    pub(crate) recipe_states: Vec<RecipeState>,
    /// In a large message, the results of the reports (report entry, Observation entry), in
    /// the order they came: added to the report when it is written (nothing else changes a
    /// report once made, so its `result` member comes last either way).
    pub(crate) results: Vec<(usize, usize)>,
    /// The entry whose resource is being made again: [`Ctx::add`] puts it there, and findings
    /// are not noted again.
    replay: Option<usize>,
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        crate::phi::wipe(&mut self.control);
        crate::phi::wipe(&mut self.last_datetime.0);
        zeroize::Zeroize::zeroize(&mut self.last_datetime.1);
    }
}

/// The FHIR path of a finding with no target (the segment or field is not mapped).
pub const NOWHERE: &str = "-";

impl<'m> Ctx<'m> {
    /// Adds a finding with the code's default severity.
    pub fn note(&mut self, code: Code, pos: Hl7Position, path: &'static str) {
        if self.findings.len() < fhir::validate::MAX_FINDINGS && self.replay.is_none() {
            self.findings.push(Diagnostic::new(code, Location::Convert(pos, path)));
        }
    }

    /// Reports each field holding a control character a FHIR string cannot (raw, or from a
    /// hex escape), which [`Reader::text`] replaced by a space wherever it was read.
    fn report_control(&mut self, msg: &Message) {
        let d = msg.delimiters();
        let mut decoded = Vec::new();
        for seg in msg.segments() {
            let header = matches!(seg.name(), Some("MSH" | "BHS" | "FHS"));
            for f in seg.fields() {
                if header && f.position().field <= 2 {
                    continue;
                }
                let raw = self.r.raw_for_key(f.bytes());
                let mut hit = raw.iter().any(|&b| read::is_forbidden_control(b));
                if !hit && raw.contains(&d.escape) {
                    crate::phi::wipe_keep(&mut decoded);
                    crate::formats::hl7v2::escape::decode(raw, &d, &mut decoded);
                    hit = decoded.iter().any(|&b| read::is_forbidden_control(b));
                }
                if hit {
                    self.note(Code::CONVERT_CONTROL_CHARACTER_REPLACED, f.position(), NOWHERE);
                }
            }
        }
        crate::phi::wipe(&mut decoded);
    }

    /// Reports every populated field of `seg` whose number is not in `mapped`.
    pub fn unmapped_fields(&mut self, seg: SegmentRef<'_>, mapped: &[u32]) {
        for f in seg.fields() {
            let n = f.position().field;
            if f.is_empty() || mapped.contains(&n) {
                continue;
            }
            if f.is_splittable() && f.repetitions().all(|r| r.bytes.is_empty()) {
                continue;
            }
            self.note(Code::CONVERT_FIELD_UNMAPPED, f.position(), NOWHERE);
        }
    }

    /// The UUID text (`8-4-4-4-12` lower-case hex digits) of a digest's first 16 bytes.
    fn uuid(digest: &[u8; 32]) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut b = [0u8; 16];
        b.copy_from_slice(&digest[..16]);
        b[6] = (b[6] & 0x0f) | 0x80;
        b[8] = (b[8] & 0x3f) | 0x80;
        let mut s = tree::string(36);
        for (i, x) in b.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                s.push('-');
            }
            s.push(char::from(HEX[usize::from(x >> 4)]));
            s.push(char::from(HEX[usize::from(x & 0x0f)]));
        }
        s
    }

    /// An id from the message control id, the resource type and a position (segment index and
    /// a sub-position): keyed when a key is given.
    pub fn positional_id(&self, ty: &str, segment: u32, sub: u32) -> String {
        let seg = segment.to_be_bytes();
        let sub = sub.to_be_bytes();
        let record = self.record.to_be_bytes();
        let ctl: &[u8] = if self.control.is_empty() { &record } else { &self.control };
        match &self.opts.key {
            Some(k) => {
                let parts: [&[u8]; 5] = [b"positional", ctl, ty.as_bytes(), &seg, &sub];
                Self::uuid(&k.mac(ID_DOMAIN, &parts))
            }
            None => {
                // The digest of the domain and the first two parts is the same for every id of
                // the message: continue from its state.
                let mut h = self.positional_prefix.clone();
                for p in [ty.as_bytes(), &seg, &sub] {
                    h.update((p.len() as u64).to_be_bytes());
                    h.update(p);
                }
                Self::uuid(&h.finalize().into())
            }
        }
    }

    /// The SHA-256 state after the domain, `positional` and the message's control bytes (MSH-10,
    /// else the record number): the start of every unkeyed positional id (see
    /// [`Ctx::positional_id`]).
    fn positional_prefix(control: &[u8], record: u64) -> Sha256 {
        let record = record.to_be_bytes();
        let ctl: &[u8] = if control.is_empty() { &record } else { control };
        let mut h = Sha256::new();
        h.update(ID_DOMAIN.as_bytes());
        for p in [b"positional".as_slice(), ctl] {
            h.update((p.len() as u64).to_be_bytes());
            h.update(p);
        }
        h
    }

    /// An id from identifiers (keyed only: without a key, the positional id is used, never a
    /// bare hash of an identifier).
    pub fn identity_id(&self, ty: &str, identity: &[u8], segment: u32, sub: u32) -> String {
        match &self.opts.key {
            Some(k) if !identity.is_empty() => Self::uuid(&k.mac(ID_DOMAIN, &[b"identity", ty.as_bytes(), identity])),
            _ => self.positional_id(ty, segment, sub),
        }
    }

    /// Starts a resource: `resourceType` and `id`.
    pub fn resource(ty: &'static str, id: &str) -> Obj {
        // Most resources the converter builds have 10 to 16 members.
        let mut o = Obj::with_capacity(16);
        o.set("resourceType", V::code(ty));
        o.set("id", V::S(tree::copy(id)));
        o
    }

    /// Adds an entry; returns its index. While an entry's resource is made again, puts the
    /// resource there instead.
    pub fn add(&mut self, ty: &'static str, id: String, res: Obj) -> usize {
        if let Some(i) = self.replay {
            if let Some(e) = self.entries.get_mut(i) {
                e.res = res;
            }
            return i;
        }
        self.entries.push(Entry { ty, id, res, key: Vec::new(), recipe: None });
        self.entries.len() - 1
    }

    /// In a large message, drops the resource of Observation entry `i` just made from `obx`
    /// (with `order` and `effective`), keeping how to make it again.
    pub(crate) fn made_observation(
        &mut self,
        i: usize,
        obx: SegmentRef<'m>,
        order: Option<usize>,
        effective: Option<&String>,
    ) {
        if !self.lazy || self.replay.is_some() {
            return;
        }
        let Some(e) = self.entries.get_mut(i) else { return };
        let values = fhir::direct::count_checked(&V::O(std::mem::take(&mut e.res)));
        let same = self.recipe_states.last().is_some_and(|s| {
            s.patient == self.patient && s.encounter == self.encounter && s.effective.as_ref() == effective
        });
        if !same {
            self.recipe_states.push(RecipeState {
                patient: self.patient.clone(),
                encounter: self.encounter.clone(),
                effective: effective.cloned(),
            });
        }
        let state = u32::try_from(self.recipe_states.len().saturating_sub(1)).unwrap_or(u32::MAX);
        e.recipe = u32::try_from(self.recipes.len()).ok();
        self.recipes.push(Recipe { obx, order, state, notes: Vec::new(), values });
    }

    /// The range of [`Ctx::results`] that report entry `i` waits for (they are in entry order:
    /// a report's results come before the next report is made).
    fn results_of(&self, i: usize) -> (usize, usize) {
        (self.results.partition_point(|r| r.0 < i), self.results.partition_point(|r| r.0 <= i))
    }

    /// The recipe of entry `i`, when its resource is not held.
    pub(crate) fn recipe_mut(&mut self, i: usize) -> Option<&mut Recipe<'m>> {
        if self.replay.is_some() {
            return None;
        }
        let r = self.entries.get(i)?.recipe?;
        self.recipes.get_mut(r as usize)
    }

    /// Makes the resource of entry `i` again from its recipe (without findings or new entries)
    /// and takes it; else takes the resource held.
    fn take_resource(&mut self, i: usize) -> Obj {
        let Some(r) = self.entries.get(i).and_then(|e| e.recipe) else {
            let mut res = self.entries.get_mut(i).map(|e| std::mem::take(&mut e.res)).unwrap_or_default();
            let (from, to) = self.results_of(i);
            for k in from..to {
                let Some(&(_, o)) = self.results.get(k) else { break };
                // As `reference_obj`, with room for its one member only (a report may have
                // hundreds of thousands of results).
                let mut reference = Obj::with_exact_capacity(1);
                reference.set("reference", V::S(self.entry_ref(o)));
                res.push_obj("result", reference);
            }
            return res;
        };
        let Some(recipe) = self.recipes.get_mut(r as usize) else { return Obj::new() };
        let (obx, order, state, notes) = (recipe.obx, recipe.order, recipe.state, std::mem::take(&mut recipe.notes));
        let (patient, encounter, effective) = match self.recipe_states.get(state as usize) {
            Some(s) => (s.patient.clone(), s.encounter.clone(), s.effective.clone()),
            None => (None, None, None),
        };
        let patient = std::mem::replace(&mut self.patient, patient);
        let encounter = std::mem::replace(&mut self.encounter, encounter);
        self.replay = Some(i);
        orders::observation_again(self, obx, effective, order, &notes);
        self.replay = None;
        if let Some(mut p) = std::mem::replace(&mut self.patient, patient) {
            crate::phi::wipe_string(&mut p);
        }
        if let Some(mut e) = std::mem::replace(&mut self.encounter, encounter) {
            crate::phi::wipe_string(&mut e);
        }
        self.entries.get_mut(i).map(|e| std::mem::take(&mut e.res)).unwrap_or_default()
    }

    /// The reference of the shared resource of type `ty` already made from the identifying
    /// bytes `key`, if any (a mapper asks before building one that the message names again).
    pub fn shared_ref(&self, ty: &str, key: &[u8]) -> Option<String> {
        self.entries.iter().find(|e| e.ty == ty && !e.key.is_empty() && e.key == key).map(|e| reference(&e.id))
    }

    /// Adds a shared resource (Practitioner, Location, Organization) unless one with the same
    /// type and identifying bytes exists; returns its reference.
    pub fn add_shared(&mut self, ty: &'static str, key: Vec<u8>, id: String, res: Obj) -> String {
        if let Some(r) = self.shared_ref(ty, &key) {
            let mut key = key;
            key.zeroize();
            return r;
        }
        let r = reference(&id);
        // Making a resource again finds the shared ones it made the first time.
        debug_assert!(self.replay.is_none(), "convert: a resource made again adds a shared resource");
        if self.replay.is_none() {
            self.entries.push(Entry { ty, id, res, key, recipe: None });
        }
        r
    }

    /// The resource of an entry.
    pub fn entry_mut(&mut self, i: usize) -> &mut Obj {
        &mut self.entries[i].res
    }

    /// The entry of type `ty` that `reference` (a `urn:uuid:` reference) names.
    pub fn entry_of(&self, ty: &str, reference: &str) -> Option<usize> {
        let id = reference.strip_prefix("urn:uuid:")?;
        self.entries.iter().position(|e| e.ty == ty && e.id == id)
    }

    /// The reference to an entry.
    pub fn entry_ref(&self, i: usize) -> String {
        reference(&self.entries[i].id)
    }
}

/// A `urn:uuid:` reference.
pub fn reference(id: &str) -> String {
    let mut r = tree::string(9 + id.len());
    r.push_str("urn:uuid:");
    r.push_str(id);
    r
}

/// A Reference object.
pub fn reference_obj(r: &str) -> Obj {
    let mut o = Obj::new();
    o.set("reference", V::S(tree::copy(r)));
    o
}

/// Converts one message. `record` numbers the message in its input (ids of messages without
/// MSH-10 use it).
pub fn convert(msg: &Message, opts: &Options, record: u64, limits: &Limits, disclosure: &Disclosure) -> Converted {
    convert_after(b"", 0, msg, opts, record, limits, disclosure, None)
}

/// [`convert`], writing the Bundle after `prefix` (the start of the record that holds it, so
/// that the data-channel writer appends to the Bundle's buffer instead of copying it), in a
/// buffer sized to leave `room_per_finding` bytes after the Bundle for each finding (which the
/// caller appends). `prefix` is the caller's text, never a value.
///
/// With `spill` (a large message), memory does not grow with the Bundle: Observations are not
/// held once made (they are made again, one at a time, as the Bundle is written), and once the
/// Bundle is known to pass the FHIR reader's node limit (its finding is then known without the
/// bytes), its bytes go to `spill` as they are written, the prefix first; `out` keeps the rest
/// ([`Converted::spilled`]). The bytes are the same either way.
#[allow(clippy::too_many_arguments)]
pub fn convert_after(
    prefix: &[u8],
    room_per_finding: usize,
    msg: &Message,
    opts: &Options,
    record: u64,
    limits: &Limits,
    disclosure: &Disclosure,
    spill: Option<fhir::direct::Spill<'_>>,
) -> Converted {
    let r = Reader::new(msg, disclosure);
    let msh = msg.msh();
    let control = r.first(msh, 10).map(|rep| r.raw_for_key(rep.bytes).to_vec()).unwrap_or_default();
    let message_type = (r.field_text(msh, 9, 1).unwrap_or_default(), r.field_code(msh, 9, 2).unwrap_or_default());
    let mut ctx = Ctx {
        r,
        opts,
        findings: Vec::new(),
        entries: Vec::new(),
        positional_prefix: Ctx::positional_prefix(&control, record),
        control,
        record,
        patient: None,
        encounter: None,
        message_type,
        last_datetime: (Vec::new(), String::new(), false),
        lazy: spill.is_some(),
        recipes: Vec::new(),
        recipe_states: Vec::new(),
        results: Vec::new(),
        replay: None,
    };
    if ctx.control.is_empty() {
        ctx.note(Code::CONVERT_CONTROL_ID_MISSING, msh.position().field(10, 0), "Bundle.identifier");
    }
    // An MSH-2 the parser repaired (its escape character written twice): said, as a warning
    // (the input's fault; the Bundle's verdict is its own).
    if msh.field(2).is_some_and(|fr| fr.bytes().classify(|v| v.len() == 5 && v[2] == v[3])) {
        let d = Diagnostic::new(
            Code::ENCODING_CHARACTERS_DOUBLED_ESCAPE,
            Location::Convert(msh.position().field(2, 0), NOWHERE),
        );
        ctx.findings.push(d.with_severity(crate::diag::Severity::Warning));
    }
    let supported = SUPPORTED.iter().any(|(t, e)| ctx.message_type.0 == *t && ctx.message_type.1 == *e);
    if !supported {
        ctx.note(Code::CONVERT_MESSAGE_UNSUPPORTED, msh.position().field(9, 0), "MessageHeader.eventCoding");
    }
    let sft = msg.segments().find(|s| s.name() == Some("SFT"));
    let header = segments::msh(&mut ctx, msh, sft);
    segments::prepare(&mut ctx, msg);
    orders::walk(&mut ctx, msg);
    segments::finish_header(&mut ctx, header);
    if ctx.r.replaced_control() {
        ctx.report_control(msg);
    }
    let last = LAST.load(Ordering::Relaxed);
    let mut bundle = Vec::with_capacity(prefix.len() + last + last / 8);
    bundle.extend_from_slice(prefix);
    let start = bundle.len();
    let mut spilled = false;
    let written = match spill {
        Some(spill) => {
            let mut spill_and_say = |bytes: &[u8]| {
                spilled = true;
                spill(bytes);
            };
            write_bundle(&mut ctx, msh, &mut bundle, limits, Some(&mut spill_and_say))
        }
        None => write_bundle(&mut ctx, msh, &mut bundle, limits, None),
    };
    let mut findings = std::mem::take(&mut ctx.findings);
    drop(ctx);
    // The Bundle's element tree comes from the writing walk; when the tree has a shape the
    // JSON reader would report, the bytes are read back instead (same document, with findings).
    #[cfg(debug_assertions)]
    if !spilled {
        // Debug builds (the tests) check the walk against reading its bytes back, on every
        // conversion; the message names only the first node that differs.
        match &written {
            fhir::direct::Written::Built(doc) => {
                if let Err(node) = fhir::direct::compare_with_read(doc, &bundle[start..], limits) {
                    panic!("convert: the written Bundle's element tree differs from reading it at node {node}");
                }
            }
            fhir::direct::Written::Fatal(d) => {
                let read = fhir::read(bundle[start..].to_vec(), limits).err();
                assert_eq!(read, Some(*d), "convert: the reader stops elsewhere than the walk says");
            }
            fhir::direct::Written::ReadBack => {}
        }
    }
    let doc = match written {
        fhir::direct::Written::Built(doc) => Ok(doc),
        // Never after a spill (the walk spills only once the reader's stop is known); were it
        // to happen, what is left reads as broken JSON, a fatal finding.
        fhir::direct::Written::ReadBack => fhir::read(bundle.get(start..).unwrap_or_default().to_vec(), limits),
        fhir::direct::Written::Fatal(d) => Err(d),
    };
    match doc {
        Ok(doc) => {
            findings.extend(fhir::validate::validate(&doc, fhir::validate::Options { strict: false, core_only: true }))
        }
        Err(fatal) => findings.push(fatal),
    }
    findings.truncate(fhir::validate::MAX_FINDINGS);
    let start = if spilled { 0 } else { start };
    let size = bundle.len().saturating_sub(start) + room_per_finding * findings.len();
    LAST.store(size.max(last - last / 8).max(4096), Ordering::Relaxed);
    Converted { out: bundle, start, spilled, findings }
}

/// The size of the recent Bundles with the room for their findings (the next is sized from
/// it): the largest, decaying by an eighth per message, so that a stream of messages of varying
/// sizes rarely grows its buffer. Shared by the threads (the converting threads of `ops` live
/// for one batch of messages); a capacity only, never in the output.
static LAST: AtomicUsize = AtomicUsize::new(4096);

/// Writes the Bundle to `out` (and `spill`, see [`convert_after`]): its header, then its
/// entries one at a time, each made (or taken) just before it is written.
fn write_bundle<'o>(
    ctx: &mut Ctx<'_>,
    msh: SegmentRef<'_>,
    out: &'o mut Vec<u8>,
    limits: &Limits,
    spill: Option<fhir::direct::Spill<'o>>,
) -> fhir::direct::Written {
    let mut b = Obj::new();
    b.set("resourceType", V::code("Bundle"));
    b.set("id", V::S(ctx.positional_id("Bundle", 0, 0)));
    if let Some(rep) = ctx.r.first(msh, 10) {
        let mut id = Obj::new();
        id.opt("value", ctx.r.text(rep.c(1)));
        b.obj("identifier", id);
    }
    b.set("type", V::code(ctx.opts.bundle_type.as_str()));
    if let Some(rep) = ctx.r.first(msh, 7) {
        let ts = ctx.instant(rep, 1, "Bundle.timestamp");
        b.opt("timestamp", ts);
    }
    let transaction = ctx.opts.bundle_type == BundleType::Transaction;
    // A large message whose entries alone pass the FHIR reader's node limit (and whose numbers
    // are all JSON numbers): the reader's finding is known before the Bundle is written, its
    // element tree is not built, and its bytes can be spilled from the start.
    let over_limit = ctx.lazy && {
        let per_entry = if transaction { 5 } else { 2 };
        let mut values = Some(0usize);
        for (i, e) in ctx.entries.iter().enumerate() {
            let resource = match e.recipe.and_then(|r| ctx.recipes.get(r as usize)) {
                Some(r) => r.values,
                None => e.res.count_checked(),
            };
            // The results waiting for a report: the array, then an object and its reference each.
            let (from, to) = ctx.results_of(i);
            let results = if to > from { 1 + 2 * (to - from) } else { 0 };
            values = values.and_then(|v| Some(v + per_entry + resource? + results));
        }
        values.is_some_and(|v| v > limits.max_segments as usize)
    };
    // Entries, MessageHeader first (it is entry 0 by construction).
    let mut next = 0usize;
    let mut entries = std::iter::from_fn(|| {
        let i = next;
        next += 1;
        ctx.entries.get(i)?;
        let res = ctx.take_resource(i);
        let e = ctx.entries.get(i)?;
        let mut entry = Obj::new();
        entry.set("fullUrl", V::S(reference(&e.id)));
        entry.obj("resource", res);
        if transaction {
            let mut req = Obj::new();
            req.set("method", V::code("PUT"));
            req.set("url", V::S(format!("{}/{}", e.ty, e.id)));
            entry.obj("request", req);
        }
        Some(V::O(entry))
    });
    fhir::direct::write_and_read_with(&V::O(b), Some(("entry", &mut entries)), out, limits, over_limit, spill)
}

crate::debug_placeholder!(Converted, Entry, Ctx<'m>);

//! Administrative segments: MSH (MessageHeader), PID and PD1 (Patient), NK1 (RelatedPerson), PV1
//! and PV2 (Encounter, with Location and Practitioner participants), AL1 (AllergyIntolerance),
//! DG1 (Condition), PR1 (Procedure), IN1 (Coverage and the payer Organization), MRG (the merged
//! Patient, linked). Field numbers each mapper reads are listed in its `MAPPED` constant; every
//! other populated field is reported `CONVERT_FIELD_UNMAPPED`.
//!
//! EVN becomes a Provenance at the end of the message ([`evn`]).
//!
//! PID-18 becomes an Account ([`account`]).
//!
//! What it does not do: PID-10 race and PID-22 ethnic group (realm extensions), IN2/IN3, GT1,
//! ROL.

use crate::diag::Code;
use crate::formats::hl7v2::parse::{Message, SegmentRef};

use super::datatypes::identifier_type;
use super::read::Rep;
use super::tree::{self, Obj, V};
use super::{Ctx, NOWHERE, reference, reference_obj, vocab};

const EXT_DATA_ABSENT: &str = "http://hl7.org/fhir/StructureDefinition/data-absent-reason";
const EXT_ORIGINAL_TEXT: &str = "http://hl7.org/fhir/StructureDefinition/originalText";

/// `{"extension":[{"url": data-absent-reason, "valueCode": code}]}`, for a required primitive
/// that the message does not give.
pub fn absent(code: &'static str) -> Obj {
    let mut ext = Obj::new();
    ext.set("url", V::code(EXT_DATA_ABSENT));
    ext.set("valueCode", V::code(code));
    let mut o = Obj::new();
    o.push_obj("extension", ext);
    o
}

/// The primitive's extension keeping a code that has no FHIR equivalent (never coerced).
pub fn original(text: String) -> Obj {
    let mut ext = Obj::new();
    ext.set("url", V::code(EXT_ORIGINAL_TEXT));
    ext.set("valueString", V::S(text));
    let mut o = Obj::new();
    o.push_obj("extension", ext);
    o
}

/// A CodeableConcept with one coding.
pub fn concept(system: &str, code: &str, display: Option<&str>) -> Obj {
    let mut c = Obj::new();
    c.set("system", V::S(tree::copy(system)));
    c.set("code", V::S(tree::copy(code)));
    if let Some(d) = display {
        c.set("display", V::S(tree::copy(d)));
    }
    let mut cc = Obj::new();
    cc.push_obj("coding", c);
    cc
}

/// `{"url", key: v}`; `None` when `v` is empty (an extension needs a value or extensions: ext-1).
fn extension(url: &'static str, key: &'static str, v: V) -> Option<Obj> {
    if v.is_empty() {
        return None;
    }
    let mut e = Obj::new();
    e.set("url", V::code(url));
    e.set(key, v);
    Some(e)
}

/// A part of a complex extension: `{"url": name, key: v}` (a relative url, the part's name);
/// `None` when `v` is empty.
fn extension_part(name: &'static str, key: &'static str, v: V) -> Option<Obj> {
    extension(name, key, v)
}

impl Ctx<'_> {
    /// Maps a code through `map` into `key` of `res` (an optional element with a required
    /// binding); an unknown code is reported and the element left out: a primitive with only an
    /// extension (the code in `originalText`) has no code, which a required binding forbids
    /// (the reference validator's "No code provided, and a code is required").
    pub fn mapped_code(
        &mut self,
        res: &mut Obj,
        key: &'static str,
        code: Option<String>,
        pos: crate::diag::Hl7Position,
        path: &'static str,
        map: fn(&str) -> Option<&'static str>,
    ) -> bool {
        let Some(code) = code else { return false };
        match map(&code) {
            Some(c) => {
                res.set(key, V::code(c));
                true
            }
            None => {
                self.note(Code::CONVERT_CODE_UNMAPPED, pos, path);
                let mut code = code;
                crate::phi::wipe_string(&mut code);
                false
            }
        }
    }

    /// XCN to a Practitioner (shared within the message); its reference.
    pub fn practitioner(&mut self, rep: Rep<'_>, seg: SegmentRef<'_>, path: &'static str) -> Option<String> {
        let mut p = Ctx::resource("Practitioner", "");
        if self.r.text(rep.c(1)).is_some() {
            let (system, assigner) = self.authority_system(rep, 9, path);
            let mut id = Obj::new();
            if let Some(t) = self.r.code_text(rep.c(13)) {
                id.obj("type", identifier_type(t));
            }
            let has_system = system.is_some();
            id.opt("system", system);
            id.opt("value", self.r.text(rep.c(1)));
            if !has_system {
                if let Some(a) = assigner {
                    let mut o = Obj::new();
                    o.set("display", V::S(a));
                    id.obj("assigner", o);
                }
            }
            p.push_obj("identifier", id);
        }
        let name = self.human_name(rep, 2, 10, path);
        let has_name = !name.is_empty();
        p.push_obj("name", name);
        self.unmapped_components(rep, &[1, 2, 3, 4, 5, 6, 7, 9, 10, 13], path);
        if !has_name && !p.has("identifier") {
            return None;
        }
        let key = self.r.raw_for_key(rep.bytes).to_vec();
        let identity: Vec<u8> = if self.r.text(rep.c(1)).is_some() {
            let mut k = self.r.raw_for_key(rep.c(1)).to_vec();
            k.push(0);
            k.extend_from_slice(self.r.raw_for_key(rep.c(9)));
            k
        } else {
            Vec::new()
        };
        let id = self.identity_id("Practitioner", &identity, seg.index(), rep.pos.field * 1000 + rep.pos.repetition);
        let mut identity = identity;
        zeroize::Zeroize::zeroize(&mut identity);
        p.set("id", V::S(id.clone()));
        Some(self.add_shared("Practitioner", key, id, p))
    }

    /// HD to an Organization (shared within the message); its reference.
    pub fn organization_hd(&mut self, rep: Rep<'_>, seg: SegmentRef<'_>, path: &'static str) -> Option<String> {
        let (key, id, res) = self.hd_resource("Organization", b"", rep, seg)?;
        let _ = path;
        Some(self.add_shared("Organization", key, id, res))
    }

    /// HD to a Location (shared within the message): HD-1 its name, HD-2 its identifier (a URN
    /// for an ISO OID); its reference.
    pub fn location_hd(&mut self, rep: Rep<'_>, seg: SegmentRef<'_>, path: &'static str) -> Option<String> {
        let (key, id, mut res) = self.hd_resource("Location", b"HD", rep, seg)?;
        res.set("mode", V::code("instance"));
        self.unmapped_components(rep, &[1, 2, 3], path);
        Some(self.add_shared("Location", key, id, res))
    }

    /// The resource of type `ty` an HD names (HD-1 `name`, HD-2 `identifier`), with its sharing
    /// key (`prefix` and the HD's bytes) and id; `None` when the HD has neither.
    fn hd_resource(
        &mut self,
        ty: &'static str,
        prefix: &[u8],
        rep: Rep<'_>,
        seg: SegmentRef<'_>,
    ) -> Option<(Vec<u8>, String, Obj)> {
        let name = self.r.text(rep.c(1));
        let uid = self.r.text(rep.c(2));
        let uid_type = self.r.text(rep.c(3));
        if name.is_none() && uid.is_none() {
            return None;
        }
        let mut key = prefix.to_vec();
        key.extend_from_slice(self.r.raw_for_key(rep.bytes));
        let id = self.identity_id(ty, &key, seg.index(), rep.pos.field * 1000 + rep.pos.repetition);
        let mut res = Ctx::resource(ty, &id);
        if let Some(u) = uid {
            res.push_obj("identifier", hd_identifier(u, uid_type.as_deref()));
        }
        res.opt("name", name);
        Some((key, id, res))
    }

    /// An Organization named by text (IN1-4, RXA-17.2); its reference.
    pub fn organization_named(&mut self, name: String, key: Vec<u8>, seg: SegmentRef<'_>, sub: u32) -> String {
        let id = self.identity_id("Organization", &key, seg.index(), sub);
        let mut res = Ctx::resource("Organization", &id);
        res.set("name", V::S(name));
        self.add_shared("Organization", key, id, res)
    }

    /// A shared resource of type `ty` identified by `key` (from `rep` of `seg`), made once per
    /// message: the reference of the one already made, else `build` makes it from its id (`None`
    /// when there is nothing to make: the key is wiped); its reference.
    pub fn shared(
        &mut self,
        ty: &'static str,
        mut key: Vec<u8>,
        seg: SegmentRef<'_>,
        rep: Rep<'_>,
        build: impl FnOnce(&mut Ctx<'_>, &str) -> Option<Obj>,
    ) -> Option<String> {
        if let Some(r) = self.shared_ref(ty, &key) {
            zeroize::Zeroize::zeroize(&mut key);
            return Some(r);
        }
        let id = self.identity_id(ty, &key, seg.index(), rep.pos.field * 1000 + rep.pos.repetition);
        match build(self, &id) {
            Some(res) => Some(self.add_shared(ty, key, id, res)),
            None => {
                zeroize::Zeroize::zeroize(&mut key);
                None
            }
        }
    }

    /// CWE to an Organization (the IG's CWE[Organization], e.g. OBX-15 producer's id): CWE-1
    /// `identifier.value` with CWE-3 as its authority (a naming-system entry gives the system,
    /// else it is reported and kept as `assigner`), CWE-2 else CWE-9 `name`; shared within the
    /// message; its reference. `None` when the CWE has neither an identifier nor a name.
    pub fn organization_cwe(&mut self, rep: Rep<'_>, seg: SegmentRef<'_>, path: &'static str) -> Option<String> {
        let mut key = b"CWE".to_vec();
        key.extend_from_slice(self.r.raw_for_key(rep.bytes));
        self.shared("Organization", key, seg, rep, |ctx, id| {
            let value = ctx.r.text(rep.c(1));
            let name = ctx.r.text(rep.c(2)).or_else(|| ctx.r.text(rep.c(9)));
            if value.is_none() && name.is_none() {
                return None;
            }
            let mut res = Ctx::resource("Organization", id);
            if let Some(v) = value {
                let authority = ctx.r.text(rep.c(3));
                let system = authority.as_deref().and_then(|a| ctx.opts.naming.lookup(a)).map(str::to_owned);
                if authority.is_some() && system.is_none() {
                    ctx.note(Code::CONVERT_IDENTIFIER_SYSTEM_UNKNOWN, rep.at(3), path);
                }
                res.push_obj("identifier", identifier_with(None, system, v, authority));
            }
            res.opt("name", name);
            ctx.unmapped_components(rep, &[1, 2, 3, 9], path);
            Some(res)
        })
    }

    /// XON to an Organization (the IG's XON[Organization], e.g. OBX-23 performing organization):
    /// XON-1 `name`, XON-10 else XON-3 `identifier.value` with XON-6 its assigning authority and
    /// XON-7 its type, and `address` an XAD beside it (OBX-24); shared within the message; its
    /// reference. `None` when the XON has neither a name nor an identifier.
    pub fn organization_xon(
        &mut self,
        rep: Rep<'_>,
        address: Option<Rep<'_>>,
        seg: SegmentRef<'_>,
        path: &'static str,
    ) -> Option<String> {
        let mut key = b"XON".to_vec();
        key.extend_from_slice(self.r.raw_for_key(rep.bytes));
        key.push(0);
        key.extend_from_slice(address.map_or(&[][..], |a| self.r.raw_for_key(a.bytes)));
        self.shared("Organization", key, seg, rep, |ctx, id| {
            let name = ctx.r.text(rep.c(1));
            let value = ctx.r.text(rep.c(10)).or_else(|| ctx.r.text(rep.c(3)));
            if name.is_none() && value.is_none() {
                return None;
            }
            let mut res = Ctx::resource("Organization", id);
            if let Some(v) = value {
                let (system, assigner) = ctx.authority_system(rep, 6, path);
                let ty = ctx.r.code_text(rep.c(7));
                res.push_obj("identifier", identifier_with(ty, system, v, assigner));
            }
            res.opt("name", name);
            if let Some(a) = address {
                let a = ctx.address(a, path);
                res.push_obj("address", a);
            }
            ctx.unmapped_components(rep, &[1, 3, 6, 7, 10], path);
            Some(res)
        })
    }

    /// PL to Location resources (facility, building, floor, point of care, room, bed, each
    /// `partOf` the level above: the IG's PL[Location], which gives building and floor the
    /// facility and the building as parents and the point of care none; here the point of care
    /// is part of the floor, so that one chain holds them all); the reference of the most
    /// specific one.
    pub fn location(&mut self, rep: Rep<'_>, seg: SegmentRef<'_>, path: &'static str) -> Option<String> {
        let mut parent: Option<String> = None;
        let mut key = Vec::new();
        // (component, physical type code, display)
        for (c, ty, display) in [
            (4, "si", "Site"),
            (7, "bu", "Building"),
            (8, "lvl", "Level"),
            (1, "wa", "Ward"),
            (2, "ro", "Room"),
            (3, "bd", "Bed"),
        ] {
            // Facility (HD), building and floor (IS, CWE from v2.7): their first part.
            let part = if matches!(c, 4 | 7 | 8) { rep.composite(c).c(1) } else { rep.c(c) };
            let name = self.r.text(part);
            // Building and floor join the key only when given: the ids of the other levels
            // stay those of a PL without them.
            if !matches!(c, 7 | 8) || name.is_some() {
                key.extend_from_slice(self.r.raw_for_key(part));
                key.push(0);
            }
            let Some(name) = name else { continue };
            let id = self.identity_id("Location", &key, seg.index(), rep.pos.field * 1000 + c as u32);
            let mut res = Ctx::resource("Location", &id);
            res.set("name", V::S(name));
            if c == 3
                || (c == 2 && self.r.text(rep.c(3)).is_none())
                || (c == 1 && self.r.text(rep.c(2)).is_none() && self.r.text(rep.c(3)).is_none())
            {
                res.opt("description", self.r.text(rep.c(9)));
            }
            res.set("mode", V::code("instance"));
            res.obj(
                "physicalType",
                concept("http://terminology.hl7.org/CodeSystem/location-physical-type", ty, Some(display)),
            );
            if let Some(p) = &parent {
                res.obj("partOf", reference_obj(p));
            }
            let mut shared_key = b"PL".to_vec();
            shared_key.extend_from_slice(&key);
            parent = Some(self.add_shared("Location", shared_key, id, res));
        }
        zeroize::Zeroize::zeroize(&mut key);
        self.unmapped_components(rep, &[1, 2, 3, 4, 7, 8, 9], path);
        parent
    }
}

/// MSH to MessageHeader (entry 0) and the sender/receiver Organizations. Returns the entry.
pub fn msh(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, sft: Option<SegmentRef<'_>>) -> usize {
    let mut mapped = vec![1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 18];
    let id = ctx.positional_id("MessageHeader", seg.index(), 0);
    let mut mh = Ctx::resource("MessageHeader", &id);
    // MSH-11 (PT): the IG's PT[Meta], the processing id (table 0103) and mode (0207) as tags.
    if let Some(rep) = ctx.r.first(seg, 11) {
        let mut meta = Obj::new();
        for (c, table) in [(1, "0103"), (2, "0207")] {
            if let Some(code) = ctx.r.code_text(rep.c(c)) {
                let mut coding = Obj::new();
                coding.set("system", V::S(vocab::v2_table_system(table)));
                coding.set("code", V::S(code));
                meta.push_obj("tag", coding);
            }
        }
        mh.obj("meta", meta);
        ctx.unmapped_components(rep, &[1, 2], "MessageHeader.meta.tag");
    }
    let event = ctx.message_type.1.clone();
    if event.is_empty() {
        // eventCoding is required: the message does not say which event it is.
        mh.obj("eventCoding", absent("unknown"));
    } else {
        let mut coding = Obj::new();
        coding.set("system", V::S(vocab::v2_table_system("0003")));
        coding.set("code", V::S(event));
        mh.obj("eventCoding", coding);
    }
    let index = ctx.add("MessageHeader", id, Obj::new());
    let mut dest = Obj::new();
    dest.opt("name", ctx.r.field_text(seg, 5, 1));
    if let Some(rep) = ctx.r.first(seg, 6) {
        if let Some(org) = ctx.organization_hd(rep, seg, "MessageHeader.destination.receiver") {
            dest.obj("receiver", reference_obj(&org));
        }
    }
    if !dest.is_empty() {
        dest.obj("_endpoint", absent("unknown"));
        mh.push_obj("destination", dest);
    }
    if let Some(rep) = ctx.r.first(seg, 4) {
        if let Some(org) = ctx.organization_hd(rep, seg, "MessageHeader.sender") {
            // MSH-17 (country code) is the sender's country (the IG's MSH[MessageHeader]).
            let sender = ctx.entry_of("Organization", &org);
            if let (Some(country), Some(i)) = (ctx.r.field_text(seg, 17, 1), sender) {
                let mut a = Obj::new();
                a.set("country", V::S(country));
                ctx.entry_mut(i).push_obj("address", a);
                mapped.push(17);
            }
            mh.obj("sender", reference_obj(&org));
        }
    }
    let mut source = Obj::new();
    source.opt("name", ctx.r.field_text(seg, 3, 1));
    // The first SFT (software segment): its product name and version (the IG's
    // SFT[MessageHeader]; its other fields have only proposed extensions there).
    if let Some(sft) = sft {
        source.opt("software", ctx.r.field_text(sft, 3, 1));
        source.opt("version", ctx.r.field_text(sft, 2, 1));
        ctx.unmapped_fields(sft, &[2, 3]);
    }
    source.obj("_endpoint", absent("unknown"));
    mh.obj("source", source);
    *ctx.entry_mut(index) = mh;
    ctx.unmapped_fields(seg, &mapped);
    index
}

/// An Identifier: `type` a table 0203 code, `system`, `value`, and the authority as `assigner`
/// (display) when there is no system.
fn identifier_with(ty: Option<String>, system: Option<String>, value: String, authority: Option<String>) -> Obj {
    let mut ident = Obj::new();
    if let Some(t) = ty {
        ident.obj("type", identifier_type(t));
    }
    let has_system = system.is_some();
    ident.opt("system", system);
    ident.set("value", V::S(value));
    if let (false, Some(a)) = (has_system, authority) {
        let mut o = Obj::new();
        o.set("display", V::S(a));
        ident.obj("assigner", o);
    }
    ident
}

/// The Identifier of an HD's universal id (HD-2): a URN for an ISO OID (HD-3 `ISO` and HD-2 in
/// the OID syntax), else the value alone.
fn hd_identifier(uid: String, uid_type: Option<&str>) -> Obj {
    let mut ident = Obj::new();
    if let Some(urn) = uid_type.filter(|t| *t == "ISO").and_then(|_| super::datatypes::oid_urn(&uid)) {
        ident.set("system", V::code("urn:ietf:rfc:3986"));
        ident.set("value", V::S(urn));
    } else {
        ident.set("value", V::S(uid));
    }
    ident
}

/// EVN to Provenance (the V2-to-FHIR IG's EVN[Provenance] map), made at the end of the
/// message: `target` the Patient and the Encounter; `recorded` EVN-2, else MSH-7 (an instant);
/// `activity` the message type and trigger event as the IG's display text (MSH-9.1 and MSH-9.2,
/// else EVN-1); `reason` EVN-4 (table 0062);
/// `agent` one per EVN-5 operator (Practitioner, type `enterer`), else the sending facility
/// (MSH-4, type `author`, as the IG's MSH[Provenance-Source] map); `occurredDateTime` EVN-6;
/// `location` EVN-7 (Location). Provenance needs a target, `recorded` and an agent: without one
/// of them no Provenance is made, and EVN's fields are reported instead. EVN-3 (planned time)
/// has no place in Provenance and is reported.
pub fn evn(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, msh: SegmentRef<'_>) {
    const MAPPED: &[u32] = &[1, 2, 4, 5, 6, 7];
    let targets: Vec<String> = ctx.patient.iter().chain(ctx.encounter.iter()).cloned().collect();
    let recorded = match ctx.r.first(seg, 2) {
        Some(rep) => ctx.instant(rep, 1, "Provenance.recorded"),
        None => ctx.r.first(msh, 7).and_then(|rep| ctx.instant(rep, 1, "Provenance.recorded")),
    };
    let (Some(recorded), false) = (recorded, targets.is_empty()) else {
        ctx.unmapped_fields(seg, &[1]);
        return;
    };
    let mut agents = Vec::new();
    for rep in ctx.r.reps(seg, 5) {
        if let Some(who) = ctx.practitioner(rep, seg, "Provenance.agent.who") {
            agents.push(agent(&who, "enterer", "Enterer"));
        }
    }
    if agents.is_empty() {
        let sender = ctx.r.first(msh, 4).and_then(|rep| ctx.organization_hd(rep, msh, "Provenance.agent.who"));
        match sender {
            Some(org) => agents.push(agent(&org, "author", "Author")),
            None => {
                ctx.unmapped_fields(seg, &[1]);
                return;
            }
        }
    }
    let id = ctx.positional_id("Provenance", seg.index(), 0);
    let mut p = Ctx::resource("Provenance", &id);
    for t in &targets {
        p.push_obj("target", reference_obj(t));
    }
    if let Some(rep) = ctx.r.first(seg, 6) {
        let occurred = ctx.datetime(rep, 1, "Provenance.occurredDateTime");
        p.opt("occurredDateTime", occurred);
    }
    p.set("recorded", V::S(recorded));
    if let Some(rep) = ctx.r.first(seg, 7) {
        if let Some(loc) = ctx.location_hd(rep, seg, "Provenance.location") {
            p.obj("location", reference_obj(&loc));
        }
    }
    for rep in ctx.r.reps(seg, 4) {
        let reason = ctx.codeable(rep, Some("0062"), "Provenance.reason");
        p.push_obj("reason", reason);
    }
    // The IG's text: the message type and the event (EVN-1 when MSH-9.2 is empty); a display
    // only, as the binding's value set (data operations) has no code for a trigger event.
    let (kind, event) = (ctx.message_type.0.clone(), ctx.message_type.1.clone());
    let event = Some(event).filter(|e| !e.is_empty()).or_else(|| ctx.r.field_text(seg, 1, 1));
    if let Some(event) = event {
        let mut coding = Obj::new();
        coding.set("display", V::S(format!("event - {kind}^{event}")));
        let mut activity = Obj::new();
        activity.push_obj("coding", coding);
        p.obj("activity", activity);
    }
    for a in agents {
        p.push_obj("agent", a);
    }
    ctx.add("Provenance", id, p);
    ctx.unmapped_fields(seg, MAPPED);
}

/// A Provenance agent: `who` and its participant type.
fn agent(who: &str, code: &'static str, display: &'static str) -> Obj {
    let mut a = Obj::new();
    a.obj("type", concept("http://terminology.hl7.org/CodeSystem/provenance-participant-type", code, Some(display)));
    a.obj("who", reference_obj(who));
    a
}

/// Sets `focus` of the MessageHeader: the Patient, else the first other resource.
pub fn finish_header(ctx: &mut Ctx<'_>, header: usize) {
    let focus = ctx.patient.clone().or_else(|| (ctx.entries.len() > 1).then(|| ctx.entry_ref(1)));
    if let Some(f) = focus {
        ctx.entry_mut(header).push_obj("focus", reference_obj(&f));
    }
}

/// Computes the Patient and Encounter references before the walk (every resource can then
/// point at them).
pub fn prepare(ctx: &mut Ctx<'_>, msg: &Message) {
    if let Some(pid) = msg.segment("PID") {
        let mut identity = Vec::new();
        for rep in ctx.r.reps(pid, 3) {
            identity.extend_from_slice(ctx.r.raw_for_key(rep.c(1)));
            identity.push(0);
            identity.extend_from_slice(ctx.r.raw_for_key(rep.c(4)));
            identity.push(0);
        }
        let id = ctx.identity_id("Patient", &identity, pid.index(), 0);
        zeroize::Zeroize::zeroize(&mut identity);
        ctx.patient = Some(reference(&id));
    }
    // The PV1 the walk maps: the first, unless a second PID comes before it (from there on,
    // segments belong to another patient and are reported, not mapped).
    let mut pids = 0;
    let pv1 = msg.segments().find(|s| match s.name() {
        Some("PID") => {
            pids += 1;
            false
        }
        Some("PV1") => true,
        _ => false,
    });
    if let Some(pv1) = pv1.filter(|_| pids <= 1) {
        let id = ctx.positional_id("Encounter", pv1.index(), 0);
        ctx.encounter = Some(reference(&id));
    }
}

fn id_of(reference: &str) -> &str {
    reference.strip_prefix("urn:uuid:").unwrap_or(reference)
}

/// PID to Patient. Returns the entry.
pub fn pid(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) -> Option<usize> {
    // PID-18 is the Account's ([`account`]).
    const MAPPED: &[u32] =
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 23, 24, 25, 26, 28, 29, 30, 33, 39, 40];
    let id = id_of(ctx.patient.as_deref()?).to_owned();
    let mut p = Ctx::resource("Patient", &id);
    if let Some(rep) = ctx.r.first(seg, 33) {
        // PID-33 (last update date/time): an instant, so only with seconds and an offset.
        if let Some(t) = ctx.instant(rep, 1, "Patient.meta.lastUpdated") {
            let mut meta = Obj::new();
            meta.set("lastUpdated", V::S(t));
            p.obj("meta", meta);
        }
    }
    let mut ext = Vec::new();
    if let Some(rep) = ctx.r.first(seg, 6) {
        if let Some(family) = ctx.r.text(rep.composite(1).c(1)) {
            ext.extend(extension(
                "http://hl7.org/fhir/StructureDefinition/patient-mothersMaidenName",
                "valueString",
                V::S(family),
            ));
        }
        ctx.unmapped_components(rep, &[1], "Patient.extension");
    }
    for rep in ctx.r.reps(seg, 17) {
        let cc = ctx.codeable(rep, Some("0006"), "Patient.extension");
        ext.extend(extension(
            "http://hl7.org/fhir/StructureDefinition/patient-religion",
            "valueCodeableConcept",
            V::O(cc),
        ));
    }
    if let Some(place) = ctx.r.field_text(seg, 23, 1) {
        let mut a = Obj::new();
        a.set("text", V::S(place));
        ext.extend(extension("http://hl7.org/fhir/StructureDefinition/patient-birthPlace", "valueAddress", V::O(a)));
    }
    // PID-26 (citizenship) and PID-39 (tribal citizenship): patient-citizenship, PID-28
    // (nationality): patient-nationality, each with the code in its `code` part (table 0171,
    // 0212 when the CWE names no system).
    for (n, url, table) in [
        (26, "http://hl7.org/fhir/StructureDefinition/patient-citizenship", "0171"),
        (28, "http://hl7.org/fhir/StructureDefinition/patient-nationality", "0212"),
        (39, "http://hl7.org/fhir/StructureDefinition/patient-citizenship", "0171"),
    ] {
        for rep in ctx.r.reps(seg, n) {
            let cc = ctx.codeable(rep, Some(table), "Patient.extension");
            if let Some(part) = extension_part("code", "valueCodeableConcept", V::O(cc)) {
                let mut e = Obj::new();
                e.set("url", V::code(url));
                e.push_obj("extension", part);
                ext.push(e);
            }
        }
    }
    for e in ext {
        p.push_obj("extension", e);
    }
    for n in [2, 3, 4] {
        for rep in ctx.r.reps(seg, n) {
            let ident = ctx.identifier_cx(rep, "Patient.identifier");
            p.push_obj("identifier", ident);
        }
    }
    if let Some(ssn) = ctx.r.field_text(seg, 19, 1) {
        let mut ident = Obj::new();
        ident.obj("type", concept("http://terminology.hl7.org/CodeSystem/v2-0203", "SS", None));
        ident.set("system", V::code("http://hl7.org/fhir/sid/us-ssn"));
        ident.set("value", V::S(ssn));
        p.push_obj("identifier", ident);
    }
    if let Some(rep) = ctx.r.first(seg, 20) {
        let mut ident = Obj::new();
        ident.obj("type", concept("http://terminology.hl7.org/CodeSystem/v2-0203", "DL", None));
        ident.opt("value", ctx.r.text(rep.c(1)));
        p.push_obj("identifier", ident);
        ctx.unmapped_components(rep, &[1], "Patient.identifier");
    }
    for n in [5, 9] {
        for rep in ctx.r.reps(seg, n) {
            let name = ctx.xpn(rep, "Patient.name");
            p.push_obj("name", name);
        }
    }
    // PID-40 (patient telecommunication information, v2.7 on) has no default use.
    for (n, default_use) in [(13, Some("home")), (14, Some("work")), (40, None)] {
        for rep in ctx.r.reps(seg, n) {
            let t = ctx.telecom(rep, default_use, "Patient.telecom");
            p.push_obj("telecom", t);
        }
    }
    if let Some(rep) = ctx.r.first(seg, 8) {
        let code = ctx.r.text(rep.c(1));
        ctx.mapped_code(&mut p, "gender", code, rep.pos, "Patient.gender", vocab::gender);
    }
    if let Some(rep) = ctx.r.first(seg, 7) {
        if let Some(text) = ctx.r.text(rep.c(1)) {
            match super::datatypes::parse_dtm(&text) {
                Some(d) => {
                    p.set("birthDate", V::S(d.date()));
                    if d.has_time() {
                        let (dt, how) = d.datetime(ctx.opts.default_offset_minutes);
                        if how == super::datatypes::Written::ReducedToDate {
                            ctx.note(Code::CONVERT_TIMEZONE_MISSING, rep.pos, "Patient.birthDate.extension");
                        } else {
                            let mut o = Obj::new();
                            let url = "http://hl7.org/fhir/StructureDefinition/patient-birthTime";
                            if let Some(e) = extension(url, "valueDateTime", V::S(dt)) {
                                o.push_obj("extension", e);
                            }
                            p.obj("_birthDate", o);
                        }
                    }
                }
                None => ctx.note(Code::CONVERT_VALUE_INVALID, rep.pos, "Patient.birthDate"),
            }
        }
    }
    let death = ctx.r.first(seg, 29).and_then(|rep| ctx.datetime(rep, 1, "Patient.deceasedDateTime"));
    match death {
        Some(d) => {
            p.set("deceasedDateTime", V::S(d));
        }
        None => match ctx.r.field_text(seg, 30, 1).as_deref() {
            Some("Y") => {
                p.set("deceasedBoolean", V::B(true));
            }
            Some("N") => {
                p.set("deceasedBoolean", V::B(false));
            }
            Some(_) => ctx.note(Code::CONVERT_CODE_UNMAPPED, seg.position().field(30, 1), "Patient.deceasedBoolean"),
            None => {}
        },
    }
    let mut addresses = Vec::new();
    let mut districts = Vec::new();
    for rep in ctx.r.reps(seg, 11) {
        addresses.push(ctx.address(rep, "Patient.address"));
        districts.push(ctx.r.text(rep.c(9)));
    }
    if let Some(mut county) = ctx.r.field_text(seg, 12, 1) {
        // PID-12 (county code), as the IG: the district of the one address that has none, else
        // an address of its own (PID-12 does not repeat, PID-11 may).
        match (addresses.as_mut_slice(), districts.as_slice()) {
            ([only], [None]) => {
                only.set("district", V::S(county));
            }
            ([_], [Some(d)]) if *d == county => crate::phi::wipe_string(&mut county),
            _ => {
                let mut a = Obj::new();
                a.set("district", V::S(county));
                addresses.push(a);
            }
        }
    }
    for d in districts.iter_mut().flatten() {
        crate::phi::wipe_string(d);
    }
    for a in addresses {
        p.push_obj("address", a);
    }
    if let Some(rep) = ctx.r.first(seg, 16) {
        let code = ctx.r.text(rep.c(1));
        let system_given = ctx.r.text(rep.c(3)).is_some_and(|s| s != "HL70002");
        let v3 = matches!(code.as_deref(), Some("A" | "D" | "I" | "L" | "M" | "P" | "S" | "T" | "U" | "W"));
        let table = if v3 && !system_given { None } else { Some("0002") };
        let mut cc = ctx.codeable(rep, table, "Patient.maritalStatus");
        if v3 && !system_given {
            if let Some(c) = code {
                let display = ctx.r.text(rep.c(2));
                cc = concept("http://terminology.hl7.org/CodeSystem/v3-MaritalStatus", &c, display.as_deref());
            }
        }
        p.obj("maritalStatus", cc);
    }
    let multiple = ctx.r.field_text(seg, 24, 1);
    let order = ctx.r.field_text(seg, 25, 1);
    match (multiple.as_deref(), order) {
        (_, Some(o)) if o.parse::<u16>().is_ok() => {
            p.set("multipleBirthInteger", V::N(o.trim_start_matches('0').to_owned().max_or("0")));
        }
        (Some("Y"), _) => {
            p.set("multipleBirthBoolean", V::B(true));
        }
        (Some("N"), _) => {
            p.set("multipleBirthBoolean", V::B(false));
        }
        (Some(_), _) => {
            ctx.note(Code::CONVERT_CODE_UNMAPPED, seg.position().field(24, 1), "Patient.multipleBirthBoolean")
        }
        (None, Some(_)) => {
            ctx.note(Code::CONVERT_VALUE_INVALID, seg.position().field(25, 1), "Patient.multipleBirthInteger")
        }
        (None, None) => {}
    }
    for rep in ctx.r.reps(seg, 15) {
        let cc = ctx.codeable(rep, Some("0296"), "Patient.communication.language");
        let mut comm = Obj::new();
        comm.obj("language", cc);
        p.push_obj("communication", comm);
    }
    let i = ctx.add("Patient", id, p);
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

trait MaxOr {
    fn max_or(self, default: &str) -> String;
}

impl MaxOr for String {
    fn max_or(self, default: &str) -> String {
        if self.is_empty() { default.to_owned() } else { self }
    }
}
/// PID-18 (patient account number) to an Account (the IG's PID[Account] map): `status`
/// active, `identifier` the CX, `subject` the Patient; its reference (the Encounter's `account`).
/// A PID-18 without an id number (CX-1) is reported.
pub fn account(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) -> Option<String> {
    let rep = ctx.r.first(seg, 18)?;
    if ctx.r.text(rep.c(1)).is_none() {
        ctx.note(Code::CONVERT_FIELD_UNMAPPED, rep.pos, NOWHERE);
        return None;
    }
    let mut key = ctx.r.raw_for_key(rep.c(1)).to_vec();
    key.push(0);
    key.extend_from_slice(ctx.r.raw_for_key(rep.c(4)));
    let id = ctx.identity_id("Account", &key, seg.index(), 18_000);
    zeroize::Zeroize::zeroize(&mut key);
    let mut a = Ctx::resource("Account", &id);
    let ident = ctx.identifier_cx(rep, "Account.identifier");
    a.push_obj("identifier", ident);
    a.set("status", V::code("active"));
    if let Some(p) = &ctx.patient {
        a.push_obj("subject", reference_obj(p));
    }
    let r = reference(&id);
    ctx.add("Account", id, a);
    Some(r)
}

/// PD1-3 (patient primary facility, an Organization) and PD1-4 (primary care provider) to
/// Patient.generalPractitioner.
pub fn pd1(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, patient: Option<usize>) {
    const MAPPED: &[u32] = &[3, 4];
    let Some(i) = patient else {
        // Nothing to attach to: no Organization or Practitioner is made for it.
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    };
    for rep in ctx.r.reps(seg, 3) {
        if let Some(o) = ctx.organization_xon(rep, None, seg, "Patient.generalPractitioner") {
            ctx.entry_mut(i).push_obj("generalPractitioner", reference_obj(&o));
        }
    }
    for rep in ctx.r.reps(seg, 4) {
        if let Some(p) = ctx.practitioner(rep, seg, "Patient.generalPractitioner") {
            ctx.entry_mut(i).push_obj("generalPractitioner", reference_obj(&p));
        }
    }
    ctx.unmapped_fields(seg, MAPPED);
}

/// NK1 to RelatedPerson.
pub fn nk1(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) {
    const MAPPED: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 33, 40];
    let Some(patient) = ctx.patient.clone() else {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    };
    let id = ctx.positional_id("RelatedPerson", seg.index(), 0);
    let mut rp = Ctx::resource("RelatedPerson", &id);
    // NK1-33 (next of kin/associated party's identifiers).
    for rep in ctx.r.reps(seg, 33) {
        let ident = ctx.identifier_cx(rep, "RelatedPerson.identifier");
        rp.push_obj("identifier", ident);
    }
    rp.obj("patient", reference_obj(&patient));
    for n in [3, 7] {
        if let Some(rep) = ctx.r.first(seg, n) {
            let cc = ctx.codeable(rep, Some(if n == 3 { "0063" } else { "0131" }), "RelatedPerson.relationship");
            rp.push_obj("relationship", cc);
        }
    }
    for rep in ctx.r.reps(seg, 2) {
        let name = ctx.xpn(rep, "RelatedPerson.name");
        rp.push_obj("name", name);
    }
    // NK1-40 (next of kin telecommunication information, v2.7 on) has no default use.
    for (n, default_use) in [(5, Some("home")), (6, Some("work")), (40, None)] {
        for rep in ctx.r.reps(seg, n) {
            let t = ctx.telecom(rep, default_use, "RelatedPerson.telecom");
            rp.push_obj("telecom", t);
        }
    }
    if let Some(rep) = ctx.r.first(seg, 15) {
        let code = ctx.r.text(rep.c(1));
        ctx.mapped_code(&mut rp, "gender", code, rep.pos, "RelatedPerson.gender", vocab::gender);
    }
    if let Some(rep) = ctx.r.first(seg, 16) {
        let d = ctx.date(rep, 1, "RelatedPerson.birthDate");
        rp.opt("birthDate", d);
    }
    for rep in ctx.r.reps(seg, 4) {
        let a = ctx.address(rep, "RelatedPerson.address");
        rp.push_obj("address", a);
    }
    let start = ctx.r.first(seg, 8).and_then(|rep| ctx.date(rep, 1, "RelatedPerson.period.start"));
    let end = ctx.r.first(seg, 9).and_then(|rep| ctx.date(rep, 1, "RelatedPerson.period.end"));
    let period = ctx.period(start, end, seg.position().field(9, 1), "RelatedPerson.period.end");
    rp.obj("period", period);
    ctx.add("RelatedPerson", id, rp);
    ctx.unmapped_fields(seg, MAPPED);
}

/// PV1 to Encounter (the first PV1 of the message). Returns the entry.
pub fn pv1(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) -> Option<usize> {
    const MAPPED: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 36, 38, 42, 44, 45, 50, 52];
    let id = id_of(ctx.encounter.as_deref()?).to_owned();
    let mut e = Ctx::resource("Encounter", &id);
    let discharged = ctx.r.first(seg, 45).is_some();
    let class_code = ctx.r.field_code(seg, 2, 1);
    let status = match ctx.message_type.1.as_str() {
        "A11" => "cancelled",
        "A05" | "A14" => "planned",
        "A03" => "finished",
        _ if discharged => "finished",
        _ if class_code.as_deref() == Some("P") => "planned",
        _ => "in-progress",
    };
    e.set("status", V::code(status));
    match class_code {
        Some(code) => match vocab::patient_class(&code) {
            Some((c, display)) => {
                let mut coding = Obj::new();
                coding.set("system", V::code("http://terminology.hl7.org/CodeSystem/v3-ActCode"));
                coding.set("code", V::code(c));
                coding.set("display", V::code(display));
                e.obj("class", coding);
            }
            None => {
                ctx.note(Code::CONVERT_CODE_UNMAPPED, seg.position().field(2, 1), "Encounter.class");
                let mut coding = Obj::new();
                coding.set("system", V::S(vocab::v2_table_system("0004")));
                coding.set("code", V::S(code));
                e.obj("class", coding);
            }
        },
        None => {
            e.obj("class", absent("unknown"));
        }
    }
    // PV1-4 admission type (the IG's `type`, table 0007), and PV1-18 patient type (0018).
    for (n, table) in [(4, "0007"), (18, "0018")] {
        if let Some(rep) = ctx.r.first(seg, n) {
            let cc = ctx.codeable(rep, Some(table), "Encounter.type");
            e.push_obj("type", cc);
        }
    }
    if let Some(rep) = ctx.r.first(seg, 10) {
        let cc = ctx.codeable(rep, Some("0069"), "Encounter.serviceType");
        e.obj("serviceType", cc);
    }
    for rep in ctx.r.reps(seg, 19) {
        let mut ident = ctx.identifier_cx(rep, "Encounter.identifier");
        if !ident.has("type") {
            ident.obj("type", concept("http://terminology.hl7.org/CodeSystem/v2-0203", "VN", None));
        }
        e.push_obj("identifier", ident);
    }
    // PV1-50 alternate visit ids.
    for rep in ctx.r.reps(seg, 50) {
        let ident = ctx.identifier_cx(rep, "Encounter.identifier");
        e.push_obj("identifier", ident);
    }
    if let Some(p) = &ctx.patient.clone() {
        e.obj("subject", reference_obj(p));
    }
    for (n, code, display) in [
        (7, "ATND", "attender"),
        (8, "REF", "referrer"),
        (9, "CON", "consultant"),
        (17, "ADM", "admitter"),
        (52, "PART", "Participation"),
    ] {
        for rep in ctx.r.reps(seg, n) {
            if let Some(r) = ctx.practitioner(rep, seg, "Encounter.participant.individual") {
                let mut part = Obj::new();
                part.push_obj(
                    "type",
                    concept("http://terminology.hl7.org/CodeSystem/v3-ParticipationType", code, Some(display)),
                );
                part.obj("individual", reference_obj(&r));
                e.push_obj("participant", part);
            }
        }
    }
    let start = ctx.r.first(seg, 44).and_then(|rep| ctx.datetime(rep, 1, "Encounter.period.start"));
    let end = ctx.r.first(seg, 45).and_then(|rep| ctx.datetime(rep, 1, "Encounter.period.end"));
    let period = ctx.period(start, end, seg.position().field(45, 1), "Encounter.period.end");
    e.obj("period", period);
    let mut hosp = Obj::new();
    if let Some(rep) = ctx.r.first(seg, 5) {
        let ident = ctx.identifier_cx(rep, "Encounter.hospitalization.preAdmissionIdentifier");
        hosp.obj("preAdmissionIdentifier", ident);
    }
    // The IG's hospitalization codes, each with its HL7 table: admit source (0023),
    // re-admission (0092), diet (0114), VIP (0099), ambulatory status (0009, repeating).
    for (n, table, key, path, repeats) in [
        (14, "0023", "admitSource", "Encounter.hospitalization.admitSource", false),
        (13, "0092", "reAdmission", "Encounter.hospitalization.reAdmission", false),
        (38, "0114", "dietPreference", "Encounter.hospitalization.dietPreference", false),
        (16, "0099", "specialCourtesy", "Encounter.hospitalization.specialCourtesy", false),
        (15, "0009", "specialArrangement", "Encounter.hospitalization.specialArrangement", true),
    ] {
        for (k, rep) in ctx.r.reps(seg, n).enumerate() {
            if k > 0 && !repeats {
                ctx.note(Code::CONVERT_FIELD_UNMAPPED, rep.pos, path);
                continue;
            }
            let cc = ctx.codeable(rep, Some(table), path);
            // Arrays in FHIR but for admitSource and reAdmission.
            if matches!(key, "admitSource" | "reAdmission") {
                hosp.obj(key, cc);
            } else {
                hosp.push_obj(key, cc);
            }
        }
    }
    if let Some(rep) = ctx.r.first(seg, 36) {
        let cc = ctx.codeable(rep, Some("0112"), "Encounter.hospitalization.dischargeDisposition");
        hosp.obj("dischargeDisposition", cc);
    }
    e.obj("hospitalization", hosp);
    // Assigned and temporary locations are where the patient is (`active`), the prior one
    // `completed`, the pending one (PV1-42) `reserved`, as the IG's PV1[Encounter].
    for (n, st) in [(3, "active"), (11, "active"), (6, "completed"), (42, "reserved")] {
        if let Some(rep) = ctx.r.first(seg, n) {
            if let Some(l) = ctx.location(rep, seg, "Encounter.location.location") {
                let mut loc = Obj::new();
                loc.obj("location", reference_obj(&l));
                loc.set("status", V::code(st));
                e.push_obj("location", loc);
            }
        }
    }
    let i = ctx.add("Encounter", id, e);
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

/// PV2-3 to Encounter.reasonCode.
pub fn pv2(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, encounter: Option<usize>) {
    const MAPPED: &[u32] = &[1, 3, 13, 25];
    let Some(i) = encounter else {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    };
    if let Some(rep) = ctx.r.first(seg, 3) {
        let cc = ctx.codeable(rep, None, "Encounter.reasonCode");
        ctx.entry_mut(i).push_obj("reasonCode", cc);
    }
    // PV2-1 (prior pending location): a location `planned` (the IG's PV2[Encounter]).
    if let Some(rep) = ctx.r.first(seg, 1) {
        if let Some(l) = ctx.location(rep, seg, "Encounter.location.location") {
            let mut loc = Obj::new();
            loc.obj("location", reference_obj(&l));
            loc.set("status", V::code("planned"));
            ctx.entry_mut(i).push_obj("location", loc);
        }
    }
    // PV2-13 (referral source code): a referrer participant.
    for rep in ctx.r.reps(seg, 13) {
        if let Some(r) = ctx.practitioner(rep, seg, "Encounter.participant.individual") {
            let mut part = Obj::new();
            part.push_obj(
                "type",
                concept("http://terminology.hl7.org/CodeSystem/v3-ParticipationType", "REF", Some("referrer")),
            );
            part.obj("individual", reference_obj(&r));
            ctx.entry_mut(i).push_obj("participant", part);
        }
    }
    // PV2-25 (visit priority code, table 0217): the Encounter's priority, with the IG's map to
    // ActPriority (1 emergency EM, 2 urgent UR, 3 elective EL) beside the v2 code.
    if let Some(rep) = ctx.r.first(seg, 25) {
        let mut cc = ctx.codeable(rep, Some("0217"), "Encounter.priority");
        let given_in_0217 = ctx.r.text(rep.c(3)).is_none_or(|s| s == "HL70217");
        let act = match ctx.r.text(rep.c(1)).as_deref() {
            Some("1") if given_in_0217 => Some(("EM", "emergency")),
            Some("2") if given_in_0217 => Some(("UR", "urgent")),
            Some("3") if given_in_0217 => Some(("EL", "elective")),
            _ => None,
        };
        if let Some((code, display)) = act {
            let mut coding = Obj::new();
            coding.set("system", V::code("http://terminology.hl7.org/CodeSystem/v3-ActPriority"));
            coding.set("code", V::code(code));
            coding.set("display", V::code(display));
            cc.push_obj("coding", coding);
        }
        ctx.entry_mut(i).obj("priority", cc);
    }
    ctx.unmapped_fields(seg, MAPPED);
}

/// AL1 to AllergyIntolerance. Returns the entry.
pub fn al1(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) -> Option<usize> {
    const MAPPED: &[u32] = &[1, 2, 3, 4, 5, 6];
    let Some(patient) = ctx.patient.clone() else {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return None;
    };
    let id = ctx.positional_id("AllergyIntolerance", seg.index(), 0);
    let mut a = Ctx::resource("AllergyIntolerance", &id);
    // An AL1 lists a current allergy (chapter 3): clinicalStatus active, as the IG maps it.
    a.obj(
        "clinicalStatus",
        concept("http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", "active", None),
    );
    if let Some(rep) = ctx.r.first(seg, 2) {
        if let Some(code) = ctx.r.text(rep.c(1)) {
            match vocab::allergy_category(&code) {
                Some(cat) => {
                    a.push("category", V::code(cat));
                }
                None => ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "AllergyIntolerance.category"),
            }
        }
        ctx.unmapped_components(rep, &[1, 2, 3], "AllergyIntolerance.category");
    }
    if let Some(rep) = ctx.r.first(seg, 4) {
        let code = ctx.r.text(rep.c(1));
        ctx.mapped_code(
            &mut a,
            "criticality",
            code,
            rep.pos,
            "AllergyIntolerance.criticality",
            vocab::allergy_criticality,
        );
    }
    if let Some(rep) = ctx.r.first(seg, 3) {
        let cc = ctx.codeable(rep, None, "AllergyIntolerance.code");
        a.obj("code", cc);
    }
    a.obj("patient", reference_obj(&patient));
    if let Some(rep) = ctx.r.first(seg, 6) {
        let d = ctx.date(rep, 1, "AllergyIntolerance.onsetDateTime");
        a.opt("onsetDateTime", d);
    }
    let mut reaction = Obj::new();
    for rep in ctx.r.reps(seg, 5) {
        if let Some(t) = ctx.r.text(rep.bytes) {
            let mut cc = Obj::new();
            cc.set("text", V::S(t));
            reaction.push_obj("manifestation", cc);
        }
    }
    a.push_obj("reaction", reaction);
    let i = ctx.add("AllergyIntolerance", id, a);
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

/// DG1 to Condition (category encounter-diagnosis).
pub fn dg1(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) {
    const MAPPED: &[u32] = &[1, 3, 4, 5, 16];
    let Some(patient) = ctx.patient.clone() else {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    };
    let id = ctx.positional_id("Condition", seg.index(), 0);
    let mut c = Ctx::resource("Condition", &id);
    c.push_obj(
        "category",
        concept("http://terminology.hl7.org/CodeSystem/condition-category", "encounter-diagnosis", None),
    );
    let mut code = match ctx.r.first(seg, 3) {
        Some(rep) => ctx.codeable(rep, None, "Condition.code"),
        None => Obj::new(),
    };
    if !code.has("text") {
        code.opt("text", ctx.r.field_text(seg, 4, 1));
    }
    c.obj("code", code);
    c.obj("subject", reference_obj(&patient));
    if let Some(e) = ctx.encounter.clone() {
        c.obj("encounter", reference_obj(&e));
    }
    if let Some(rep) = ctx.r.first(seg, 5) {
        let d = ctx.datetime(rep, 1, "Condition.onsetDateTime");
        c.opt("onsetDateTime", d);
    }
    if let Some(rep) = ctx.r.first(seg, 16) {
        if let Some(p) = ctx.practitioner(rep, seg, "Condition.asserter") {
            c.obj("asserter", reference_obj(&p));
        }
    }
    let condition = reference(&id);
    ctx.add("Condition", id, c);
    // The IG's DG1[Encounter] map: the Encounter's `diagnosis` names the Condition, with DG1-6
    // (diagnosis type, table 0052; "A" is the diagnosis role AD) as its use and DG1-15
    // (diagnosis priority) as its rank. Without an Encounter, DG1-6 and DG1-15 are reported.
    let encounter = ctx.encounter.as_deref().and_then(|e| ctx.entry_of("Encounter", e));
    let Some(enc) = encounter else {
        ctx.unmapped_fields(seg, MAPPED);
        return;
    };
    let mut diagnosis = Obj::new();
    diagnosis.obj("condition", reference_obj(&condition));
    if let Some(rep) = ctx.r.first(seg, 6) {
        let mut cc = ctx.codeable(rep, Some("0052"), "Encounter.diagnosis.use");
        if ctx.r.text(rep.c(1)).as_deref() == Some("A") && ctx.r.text(rep.c(3)).is_none_or(|s| s == "HL70052") {
            let mut coding = Obj::new();
            coding.set("system", V::code("http://terminology.hl7.org/CodeSystem/diagnosis-role"));
            coding.set("code", V::code("AD"));
            coding.set("display", V::code("Admission diagnosis"));
            cc.push_obj("coding", coding);
        }
        diagnosis.obj("use", cc);
    }
    if let Some(rank) = ctx.r.field_text(seg, 15, 1) {
        match rank.parse::<u32>() {
            Ok(n) if n > 0 => {
                diagnosis.set("rank", V::N(n.to_string()));
            }
            _ => ctx.note(Code::CONVERT_VALUE_INVALID, seg.position().field(15, 1), "Encounter.diagnosis.rank"),
        }
        let mut rank = rank;
        crate::phi::wipe_string(&mut rank);
    }
    ctx.entry_mut(enc).push_obj("diagnosis", diagnosis);
    ctx.unmapped_fields(seg, &[1, 3, 4, 5, 6, 15, 16]);
}

/// PR1 to Procedure (status completed: PR1 reports procedures performed).
pub fn pr1(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) {
    const MAPPED: &[u32] = &[1, 3, 4, 5, 11, 12];
    let Some(patient) = ctx.patient.clone() else {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    };
    let id = ctx.positional_id("Procedure", seg.index(), 0);
    let mut p = Ctx::resource("Procedure", &id);
    p.set("status", V::code("completed"));
    let mut code = match ctx.r.first(seg, 3) {
        Some(rep) => ctx.codeable(rep, None, "Procedure.code"),
        None => Obj::new(),
    };
    if !code.has("text") {
        code.opt("text", ctx.r.field_text(seg, 4, 1));
    }
    p.obj("code", code);
    p.obj("subject", reference_obj(&patient));
    if let Some(e) = ctx.encounter.clone() {
        p.obj("encounter", reference_obj(&e));
    }
    if let Some(rep) = ctx.r.first(seg, 5) {
        let d = ctx.datetime(rep, 1, "Procedure.performedDateTime");
        p.opt("performedDateTime", d);
    }
    for n in [11, 12] {
        for rep in ctx.r.reps(seg, n) {
            if let Some(r) = ctx.practitioner(rep, seg, "Procedure.performer.actor") {
                let mut perf = Obj::new();
                perf.obj("actor", reference_obj(&r));
                p.push_obj("performer", perf);
            }
        }
    }
    ctx.add("Procedure", id, p);
    ctx.unmapped_fields(seg, MAPPED);
}

/// IN1 to Coverage and the payer Organization.
pub fn in1(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) {
    let mut mapped = vec![1, 2, 3, 4, 8, 12, 13, 15, 17, 36];
    let Some(patient) = ctx.patient.clone() else {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    };
    let id = ctx.positional_id("Coverage", seg.index(), 0);
    let mut c = Ctx::resource("Coverage", &id);
    if let Some(rep) = ctx.r.first(seg, 36) {
        let ident = ctx.identifier_cx(rep, "Coverage.identifier");
        c.push_obj("identifier", ident);
    }
    c.set("status", V::code("active"));
    // IN1-15 (plan type, table 0086): the Coverage's type (the IG's IN1[Coverage]).
    if let Some(rep) = ctx.r.first(seg, 15) {
        let cc = ctx.codeable(rep, Some("0086"), "Coverage.type");
        c.obj("type", cc);
    }
    // The subscriber (the IG's IN1-16 rows): the Patient when IN1-17 says self, else a
    // RelatedPerson named by IN1-16 with IN1-17 as relationship, IN1-18 birth date and IN1-19
    // address.
    let relation = ctx.r.first(seg, 17).and_then(|rep| ctx.r.code_text(rep.c(1)));
    if relation.as_deref() == Some("SEL") {
        c.obj("subscriber", reference_obj(&patient));
        mapped.extend([16, 18, 19]);
    } else if ctx.r.first(seg, 16).is_some() {
        let rid = ctx.positional_id("RelatedPerson", seg.index(), 16);
        let mut rp = Ctx::resource("RelatedPerson", &rid);
        rp.obj("patient", reference_obj(&patient));
        if let Some(rep) = ctx.r.first(seg, 17) {
            let cc = ctx.codeable(rep, Some("0063"), "RelatedPerson.relationship");
            rp.push_obj("relationship", cc);
        }
        for rep in ctx.r.reps(seg, 16) {
            let name = ctx.xpn(rep, "RelatedPerson.name");
            rp.push_obj("name", name);
        }
        if let Some(rep) = ctx.r.first(seg, 18) {
            let d = ctx.date(rep, 1, "RelatedPerson.birthDate");
            rp.opt("birthDate", d);
        }
        for rep in ctx.r.reps(seg, 19) {
            let a = ctx.address(rep, "RelatedPerson.address");
            rp.push_obj("address", a);
        }
        let r = reference(&rid);
        ctx.add("RelatedPerson", rid, rp);
        c.obj("subscriber", reference_obj(&r));
        mapped.extend([16, 18, 19]);
    }
    let mut relation = relation;
    if let Some(r) = relation.as_mut() {
        crate::phi::wipe_string(r);
    }
    c.obj("beneficiary", reference_obj(&patient));
    if let Some(rep) = ctx.r.first(seg, 17) {
        let code = ctx.r.code_text(rep.c(1));
        if let Some(code) = code {
            match vocab::subscriber_relationship(&code) {
                Some(rel) => {
                    c.obj(
                        "relationship",
                        concept("http://terminology.hl7.org/CodeSystem/subscriber-relationship", rel, None),
                    );
                }
                None => {
                    ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "Coverage.relationship");
                    c.obj("relationship", concept(&vocab::v2_table_system("0063"), &code, None));
                }
            }
        }
    }
    let start = ctx.r.first(seg, 12).and_then(|rep| ctx.date(rep, 1, "Coverage.period.start"));
    let end = ctx.r.first(seg, 13).and_then(|rep| ctx.date(rep, 1, "Coverage.period.end"));
    let period = ctx.period(start, end, seg.position().field(13, 1), "Coverage.period.end");
    c.obj("period", period);
    // The payer: IN1-3 (company id) and IN1-4 (company name), one Organization.
    let name = ctx.r.first(seg, 4).and_then(|rep| ctx.r.text(rep.c(1)));
    let company = ctx.r.first(seg, 3);
    let mut key = b"IN1".to_vec();
    if let Some(rep) = company {
        key.extend_from_slice(ctx.r.raw_for_key(rep.bytes));
    }
    key.push(0);
    if let Some(rep) = ctx.r.first(seg, 4) {
        key.extend_from_slice(ctx.r.raw_for_key(rep.bytes));
    }
    // A company id that gives no identifier (the null value `""`) names no payer.
    let ident = company.map(|rep| ctx.identifier_cx(rep, "Organization.identifier")).filter(|i| !i.is_empty());
    if name.is_some() || ident.is_some() {
        let oid = ctx.identity_id("Organization", &key, seg.index(), 3);
        let mut org = Ctx::resource("Organization", &oid);
        if let Some(ident) = ident {
            org.push_obj("identifier", ident);
        }
        org.opt("name", name);
        // IN1-5 (insurance company address, the IG's payor address) and IN1-7 (its phone).
        for rep in ctx.r.reps(seg, 7) {
            let t = ctx.telecom(rep, Some("work"), "Organization.telecom");
            org.push_obj("telecom", t);
        }
        for rep in ctx.r.reps(seg, 5) {
            let a = ctx.address(rep, "Organization.address");
            org.push_obj("address", a);
        }
        mapped.extend([5, 7]);
        let r = ctx.add_shared("Organization", key, oid, org);
        c.push_obj("payor", reference_obj(&r));
    } else {
        zeroize::Zeroize::zeroize(&mut key);
        // payor is required: the message does not name the payer.
        ctx.note(Code::CONVERT_VALUE_MISSING, seg.position().field(3, 0), "Coverage.payor");
        c.push_obj("payor", absent("unknown"));
    }
    for (n, ty) in [(2, "plan"), (8, "group")] {
        if let Some(rep) = ctx.r.first(seg, n) {
            if let Some(v) = ctx.r.text(rep.c(1)) {
                let mut class = Obj::new();
                class.obj("type", concept("http://terminology.hl7.org/CodeSystem/coverage-class", ty, None));
                class.set("value", V::S(v));
                if n == 8 {
                    // IN1-9 (group name, XON): the group's name.
                    if let Some(group) = ctx.r.first(seg, 9).and_then(|rep| ctx.r.text(rep.c(1))) {
                        class.set("name", V::S(group));
                        mapped.push(9);
                    }
                }
                c.push_obj("class", class);
            }
        }
    }
    ctx.add("Coverage", id, c);
    ctx.unmapped_fields(seg, &mapped);
}

/// MRG: the merged (prior) Patient, inactive, `replaced-by` the surviving one, which `replaces`
/// it. MRG-1 (prior identifiers) and MRG-7 (prior name) are kept on it.
pub fn mrg(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, patient: Option<usize>) {
    const MAPPED: &[u32] = &[1, 4, 7];
    let (Some(survivor), Some(pi)) = (ctx.patient.clone(), patient) else {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    };
    let mut identity = b"MRG".to_vec();
    for rep in ctx.r.reps(seg, 1) {
        identity.extend_from_slice(ctx.r.raw_for_key(rep.c(1)));
        identity.push(0);
        identity.extend_from_slice(ctx.r.raw_for_key(rep.c(4)));
        identity.push(0);
    }
    let id = ctx.identity_id("Patient", &identity, seg.index(), 0);
    zeroize::Zeroize::zeroize(&mut identity);
    let mut old = Ctx::resource("Patient", &id);
    for n in [1, 4] {
        for rep in ctx.r.reps(seg, n) {
            let ident = ctx.identifier_cx(rep, "Patient.identifier");
            old.push_obj("identifier", ident);
        }
    }
    old.set("active", V::B(false));
    for rep in ctx.r.reps(seg, 7) {
        let name = ctx.xpn(rep, "Patient.name");
        old.push_obj("name", name);
    }
    let mut link = Obj::new();
    link.obj("other", reference_obj(&survivor));
    link.set("type", V::code("replaced-by"));
    old.push_obj("link", link);
    let old_ref = reference(&id);
    ctx.add("Patient", id, old);
    let mut back = Obj::new();
    back.obj("other", reference_obj(&old_ref));
    back.set("type", V::code("replaces"));
    ctx.entry_mut(pi).push_obj("link", back);
    ctx.unmapped_fields(seg, MAPPED);
}

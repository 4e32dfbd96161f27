//! Orders, results and the other clinical segments, and the walk over a message's segments:
//! ORC and OBR (ServiceRequest), OBR with its OBX (DiagnosticReport), OBX (Observation, value[x]
//! by OBX-2), NTE (notes of the resource before it), SPM (Specimen), RXA and RXR (Immunization),
//! ORC and RXO (MedicationRequest), SCH and AIS (Appointment), TXA and its OBX (DocumentReference).
//!
//! Appointment times come from SCH-11, else the first TQ1 after SCH (7 start, 8 end, 6 duration),
//! else AIS-4; an end missing is derived from the duration (SCH-9/10, TQ1-6 or AIS-7/8). FHIR needs
//! start and end together (app-2) and both unless the status is proposed, cancelled or waitlist
//! (app-3): a lone time is left out and an untimed appointment becomes `proposed`, each reported
//! as `CONVERT_TIMING_INCOMPLETE`.
//!
//! AIP and AIL become participants of the appointment (actor, type, period, status).
//!
//! What it does not do: TQ1/TQ2 timing of orders, OBX-4 grouping into Observation components, ROL, AIG,
//! a second patient in one message (from a second PID on, every segment is reported, not mapped).

use crate::diag::{Code, Hl7Position};
use crate::formats::hl7v2::parse::{Message, SegmentRef};

use super::datatypes::{decimal, ordered_decimals, parse_tm, plus_minutes};
use super::read::Rep;
use super::segments::{self, absent, concept};
use super::tree::{Obj, V};
use super::{Ctx, NOWHERE, reference_obj, vocab};

/// Where the next NTE goes.
#[derive(Copy, Clone, Debug)]
struct NoteTarget {
    entry: usize,
}

#[derive(Default)]
struct State<'a> {
    patient: Option<usize>,
    encounter: Option<usize>,
    orc: Option<SegmentRef<'a>>,
    order: Option<usize>,
    report: Option<usize>,
    report_effective: Option<String>,
    note: Option<NoteTarget>,
    immunization: Option<usize>,
    appointment: Option<Appt>,
    document: Option<usize>,
    document_text: Vec<String>,
    /// The EVN segment (its Provenance is made at the end, once every target exists).
    evn: Option<SegmentRef<'a>>,
    /// The Account of PID-18 (the Encounter's `account`, set at the end).
    account: Option<String>,
    /// A second PID was seen: what follows belongs to another patient (ADT^A40 and ORU^R01 may
    /// carry several); it is reported, not attached to the first one.
    other_patient: bool,
    /// The first SFT was seen (it is the MessageHeader's source).
    sft_seen: bool,
    /// TQ1 segments after an ORC whose ServiceRequest waits for its OBR.
    timing: Vec<SegmentRef<'a>>,
}

/// The appointment being built (SCH, then its TQ1 and AIS), finished at the end of the message.
#[derive(Default)]
struct Appt {
    entry: usize,
    /// The SCH segment's position (where an untimed appointment is reported).
    at: Hl7Position,
    /// The FHIR status set from SCH-25 or the event.
    status: &'static str,
    /// SCH-25 as sent, kept as the status's originalText if the status must change.
    v2_status: Option<String>,
    /// The duration in minutes (SCH-9/10, else TQ1-6, else AIS-7/8), to derive a missing end.
    minutes: Option<u32>,
    /// A TQ1 gave (or was offered) the times.
    timed_by_tq1: bool,
}

impl Drop for Appt {
    fn drop(&mut self) {
        if let Some(s) = &mut self.v2_status {
            crate::phi::wipe_string(s);
        }
    }
}

/// Walks the segments after MSH, in order.
pub fn walk<'m>(ctx: &mut Ctx<'m>, msg: &'m Message) {
    let segs: Vec<SegmentRef<'_>> = msg.segments().collect();
    let mut st = State::default();
    for (i, &seg) in segs.iter().enumerate() {
        let next = segs.get(i + 1).and_then(|s| s.name());
        let name = seg.name();
        if name == Some("PID") && st.patient.is_some() {
            st.other_patient = true;
        }
        if st.other_patient {
            ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
            continue;
        }
        match name {
            Some("MSH") if i == 0 => continue,
            Some("EVN") if st.evn.is_none() => st.evn = Some(seg),
            Some("PID") if st.patient.is_none() => {
                st.patient = segments::pid(ctx, seg);
                st.account = segments::account(ctx, seg);
                st.note = None;
            }
            Some("PD1") => segments::pd1(ctx, seg, st.patient),
            Some("NK1") => segments::nk1(ctx, seg),
            Some("PV1") if st.encounter.is_none() => {
                st.encounter = segments::pv1(ctx, seg);
                st.note = None;
            }
            Some("PV2") => segments::pv2(ctx, seg, st.encounter),
            Some("AL1") => {
                st.note = segments::al1(ctx, seg).map(|entry| NoteTarget { entry });
            }
            Some("DG1") => segments::dg1(ctx, seg),
            Some("PR1") => segments::pr1(ctx, seg),
            Some("IN1") => segments::in1(ctx, seg),
            Some("MRG") => segments::mrg(ctx, seg, st.patient),
            Some("ORC") => {
                for tq1 in std::mem::take(&mut st.timing) {
                    ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, tq1.position(), NOWHERE);
                }
                st.orc = Some(seg);
                st.order = None;
                st.report = None;
                st.note = None;
                if !matches!(next, Some("OBR" | "RXO" | "RXA" | "TQ1")) {
                    st.order = service_request(ctx, Some(seg), None, false);
                    st.note = st.order.map(|entry| NoteTarget { entry });
                }
            }
            Some("OBR") => {
                let orc = st.orc.take();
                // OBR-14/15 (specimen received, specimen source) make a Specimen when the order
                // has no SPM (older messages); with one, the SPM is the specimen.
                let has_spm = segs[i + 1..]
                    .iter()
                    .map(|s| s.name())
                    .take_while(|n| !matches!(n, Some("ORC" | "OBR")))
                    .any(|n| n == Some("SPM"));
                let from_obr = !has_spm && (ctx.r.first(seg, 14).is_some() || ctx.r.first(seg, 15).is_some());
                st.order = service_request(ctx, orc, Some(seg), from_obr);
                if from_obr {
                    obr_specimen(ctx, seg, st.order);
                }
                for tq1 in std::mem::take(&mut st.timing) {
                    match st.order {
                        Some(o) => order_timing(ctx, tq1, o),
                        None => ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, tq1.position(), NOWHERE),
                    }
                }
                st.note = st.order.map(|entry| NoteTarget { entry });
                st.report = None;
                st.report_effective =
                    ctx.r.first(seg, 7).and_then(|rep| ctx.datetime(rep, 1, "DiagnosticReport.effectiveDateTime"));
                if ctx.message_type.0 == "ORU" {
                    st.report = diagnostic_report(ctx, seg, st.order, st.report_effective.clone());
                }
            }
            Some("OBX") if st.document.is_some() => document_text(ctx, seg, &mut st.document_text),
            Some("OBX") => {
                let obs = observation(ctx, seg, st.report_effective.clone(), st.order);
                if let Some(o) = obs {
                    ctx.made_observation(o, seg, st.order, st.report_effective.as_ref());
                }
                if let (Some(o), Some(r)) = (obs, st.report) {
                    if ctx.lazy {
                        // Added when the report is written (see `Ctx::results`).
                        ctx.results.push((r, o));
                    } else {
                        let reference = ctx.entry_ref(o);
                        ctx.entry_mut(r).push_obj("result", reference_obj(&reference));
                    }
                }
                st.note = obs.map(|entry| NoteTarget { entry });
            }
            Some("NTE") => match st.note {
                Some(t) => note(ctx, seg, t),
                None => ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE),
            },
            Some("SPM") => {
                st.note = specimen(ctx, seg, st.order).map(|entry| NoteTarget { entry });
            }
            Some("RXA") => {
                let orc = st.orc.take();
                st.immunization = immunization(ctx, seg, orc);
                st.note = st.immunization.map(|entry| NoteTarget { entry });
            }
            Some("RXR") => match st.immunization {
                Some(i) => route(ctx, seg, i),
                None => ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE),
            },
            Some("RXO") => {
                let orc = st.orc.take();
                st.note = medication_request(ctx, seg, orc).map(|entry| NoteTarget { entry });
            }
            Some("SCH") => {
                if let Some(previous) = st.appointment.take() {
                    finish_appointment(ctx, previous);
                }
                st.appointment = appointment(ctx, seg);
                st.note = st.appointment.as_ref().map(|a| NoteTarget { entry: a.entry });
            }
            Some("TQ1") if ctx.message_type.0 == "SIU" && st.appointment.as_ref().is_some_and(|a| !a.timed_by_tq1) => {
                if let Some(a) = st.appointment.as_mut() {
                    appointment_timing(ctx, seg, a);
                }
            }
            // A TQ1 of an order group (ORC [TQ1] OBR in OML/ORM, OBR [TQ1] in ORU): the timing of
            // its ServiceRequest. Between an ORC and its OBR it waits for the OBR; an ORC whose
            // TQ1 is followed by no OBR gets its ServiceRequest here.
            Some("TQ1") if ctx.message_type.0 != "SIU" => {
                if st.order.is_none()
                    && st.orc.is_some()
                    && !matches!(next, Some("OBR" | "TQ1" | "TQ2" | "RXO" | "RXA"))
                {
                    st.order = service_request(ctx, st.orc.take(), None, false);
                    st.note = st.order.map(|entry| NoteTarget { entry });
                }
                match (st.order, st.orc.is_some()) {
                    (Some(o), false) => {
                        for tq1 in std::mem::take(&mut st.timing) {
                            order_timing(ctx, tq1, o);
                        }
                        order_timing(ctx, seg, o);
                    }
                    (None, true) => st.timing.push(seg),
                    _ => ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE),
                }
            }
            Some("RGS") => ctx.unmapped_fields(seg, &[1]),
            Some("AIS") => match st.appointment.as_mut() {
                Some(a) => {
                    service(ctx, seg, a);
                    st.note = Some(NoteTarget { entry: a.entry });
                }
                None => ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE),
            },
            Some(kind @ ("AIP" | "AIL")) => match st.appointment.as_ref() {
                Some(a) => {
                    resource_participant(ctx, seg, a.entry, kind == "AIP");
                    st.note = Some(NoteTarget { entry: a.entry });
                }
                None => ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE),
            },
            Some("TXA") => {
                st.document = document(ctx, seg);
                st.note = None;
            }
            // The first SFT is the MessageHeader's source (segments::msh); MessageHeader.source
            // has one software, so the others are reported.
            Some("SFT") if !st.sft_seen => st.sft_seen = true,
            _ => ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE),
        }
    }
    for tq1 in std::mem::take(&mut st.timing) {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, tq1.position(), NOWHERE);
    }
    if let Some(d) = st.document {
        finish_document(ctx, d, std::mem::take(&mut st.document_text));
    }
    if let Some(a) = st.appointment.take() {
        finish_appointment(ctx, a);
    }
    if let (Some(account), Some(encounter)) = (&st.account, st.encounter) {
        ctx.entry_mut(encounter).push_obj("account", reference_obj(account));
    }
    if let Some(evn) = st.evn {
        segments::evn(ctx, evn, msg.msh());
    }
}

fn subject(ctx: &Ctx<'_>, res: &mut Obj, key: &'static str) {
    if let Some(p) = &ctx.patient {
        res.obj(key, reference_obj(p));
    }
}

fn encounter(ctx: &Ctx<'_>, res: &mut Obj, key: &'static str) {
    if let Some(e) = &ctx.encounter {
        res.obj(key, reference_obj(e));
    }
}

fn status_from_orc(
    ctx: &mut Ctx<'_>,
    orc: Option<SegmentRef<'_>>,
    map: fn(&str) -> Option<&'static str>,
    path: &'static str,
) -> (&'static str, Option<String>) {
    let Some(orc) = orc else { return ("unknown", None) };
    if let Some(rep) = ctx.r.first(orc, 5) {
        if let Some(code) = ctx.r.text(rep.c(1)) {
            return match map(&code) {
                Some(s) => (s, None),
                None => {
                    ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, path);
                    ("unknown", Some(code))
                }
            };
        }
    }
    let control = ctx.r.field_text(orc, 1, 1);
    let status = match control.as_deref() {
        Some("NW" | "SN" | "XO" | "RE") => "active",
        Some("CA" | "OC" | "DC" | "CR") => "revoked",
        Some("HD" | "OH") => "on-hold",
        _ => "unknown",
    };
    (status, None)
}

/// ORC and/or OBR to ServiceRequest.
/// ORC and OBR to ServiceRequest; `specimen_from_obr`: OBR-14 and OBR-15 are mapped by
/// [`obr_specimen`].
fn service_request(
    ctx: &mut Ctx<'_>,
    orc: Option<SegmentRef<'_>>,
    obr: Option<SegmentRef<'_>>,
    specimen_from_obr: bool,
) -> Option<usize> {
    let anchor = obr.or(orc)?;
    let id = ctx.positional_id("ServiceRequest", anchor.index(), 0);
    let mut sr = Ctx::resource("ServiceRequest", &id);
    for (seg, field_placer, field_filler) in [(orc, 2, 3), (obr, 2, 3)] {
        let Some(seg) = seg else { continue };
        for (n, ty) in [(field_placer, "PLAC"), (field_filler, "FILL")] {
            if let Some(rep) = ctx.r.first(seg, n) {
                let ident = ctx.identifier_ei(rep, Some(ty), "ServiceRequest.identifier");
                sr.push_obj("identifier", ident);
            }
        }
    }
    if let Some(rep) = orc.and_then(|o| ctx.r.first(o, 4)) {
        let ident = ctx.identifier_ei(rep, None, "ServiceRequest.requisition");
        sr.obj("requisition", ident);
    }
    let (status, unknown) = status_from_orc(ctx, orc, vocab::request_status, "ServiceRequest.status");
    sr.set("status", V::code(status));
    if let Some(code) = unknown {
        sr.obj("_status", segments::original(code));
    }
    sr.set("intent", V::code("order"));
    if let Some(rep) = obr.and_then(|o| ctx.r.first(o, 4)) {
        let cc = ctx.codeable(rep, None, "ServiceRequest.code");
        sr.obj("code", cc);
    }
    subject(ctx, &mut sr, "subject");
    if ctx.patient.is_none() {
        ctx.note(Code::CONVERT_VALUE_MISSING, anchor.position(), "ServiceRequest.subject");
        sr.obj("subject", absent("unknown"));
    }
    encounter(ctx, &mut sr, "encounter");
    if let Some(rep) = orc.and_then(|o| ctx.r.first(o, 9)) {
        let d = ctx.datetime(rep, 1, "ServiceRequest.authoredOn");
        sr.opt("authoredOn", d);
    }
    let requester = orc
        .and_then(|o| ctx.r.first(o, 12).map(|r| (o, r)))
        .or_else(|| obr.and_then(|o| ctx.r.first(o, 16).map(|r| (o, r))));
    let practitioner = requester.and_then(|(seg, rep)| ctx.practitioner(rep, seg, "ServiceRequest.requester"));
    // ORC-21 (ordering facility, with ORC-22 its address): the IG's requester
    // PractitionerRole.organization; the Organization itself without an ordering provider.
    let mut orc_mapped = vec![1, 2, 3, 4, 5, 9, 12];
    let mut facility = None;
    if let Some(o) = orc {
        if let Some(rep) = ctx.r.first(o, 21) {
            let address = ctx.r.first(o, 22);
            facility = ctx.organization_xon(rep, address, o, "ServiceRequest.requester");
            if facility.is_some() {
                orc_mapped.extend([21, 22]);
            }
        }
    }
    let requester = match (practitioner, facility) {
        (Some(p), Some(org)) => {
            let mut key = b"ORDR".to_vec();
            key.extend_from_slice(p.as_bytes());
            key.push(0);
            key.extend_from_slice(org.as_bytes());
            Some(match ctx.shared_ref("PractitionerRole", &key) {
                Some(r) => r,
                None => {
                    let seg = orc.unwrap_or(anchor);
                    let id = ctx.identity_id("PractitionerRole", &key, seg.index(), 21_000);
                    let mut res = Ctx::resource("PractitionerRole", &id);
                    res.obj("practitioner", reference_obj(&p));
                    res.obj("organization", reference_obj(&org));
                    ctx.add_shared("PractitionerRole", key, id, res)
                }
            })
        }
        (p, org) => p.or(org),
    };
    if let Some(r) = requester {
        sr.obj("requester", reference_obj(&r));
    }
    // ORC-29 (order type, table 0482): where the service is wanted (`locationCode`).
    if let Some(rep) = orc.and_then(|o| ctx.r.first(o, 29)) {
        let cc = ctx.codeable(rep, Some("0482"), "ServiceRequest.locationCode");
        sr.push_obj("locationCode", cc);
        orc_mapped.push(29);
    }
    if let Some(obr) = obr {
        // OBR-5 (priority, table 0027), OBR-6 (requested date/time), OBR-11 (specimen action
        // code: G, a generated order, is a reflex order), OBR-31 (reason for study), OBR-46 and
        // OBR-47 (placer and filler supplemental service information), as the IG's
        // OBR[ServiceRequest] map.
        if let Some(rep) = ctx.r.first(obr, 5) {
            request_priority(ctx, rep, &mut sr);
        }
        if let Some(rep) = ctx.r.first(obr, 11) {
            match ctx.r.code_text(rep.c(1)).as_deref() {
                Some("G") => {
                    sr.set("intent", V::code("reflex-order"));
                }
                // Add-on: the IG proposes an intent R4 does not have.
                Some("A") => ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "ServiceRequest.intent"),
                _ => {}
            }
        }
        if let Some(rep) = ctx.r.first(obr, 6) {
            let d = ctx.datetime(rep, 1, "ServiceRequest.occurrenceDateTime");
            sr.opt("occurrenceDateTime", d);
        }
        for rep in ctx.r.reps(obr, 31) {
            let cc = ctx.codeable(rep, None, "ServiceRequest.reasonCode");
            sr.push_obj("reasonCode", cc);
        }
        // orderDetail only beside a code (prr-1): without OBR-4 they are reported.
        if sr.has("code") {
            for n in [46, 47] {
                for rep in ctx.r.reps(obr, n) {
                    let cc = ctx.codeable(rep, None, "ServiceRequest.orderDetail");
                    sr.push_obj("orderDetail", cc);
                }
            }
        }
    }
    let has_code = sr.has("code");
    let i = ctx.add("ServiceRequest", id, sr);
    if let Some(o) = orc {
        ctx.unmapped_fields(o, &orc_mapped);
    }
    if let Some(o) = obr {
        let mut fields = if ctx.message_type.0 == "ORU" {
            vec![1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 22, 24, 25, 31]
        } else {
            vec![1, 2, 3, 4, 5, 6, 7, 11, 16, 31]
        };
        if has_code {
            fields.extend([46, 47]);
        }
        if specimen_from_obr {
            fields.extend([14, 15]);
        }
        ctx.unmapped_fields(o, &fields);
    }
    Some(i)
}

/// A priority code (OBR-5, TQ1-9; tables 0027 and 0485) as a ServiceRequest's `priority`; an
/// unknown one is reported and leaves `priority` out (a later TQ1-9 may then give it).
fn request_priority(ctx: &mut Ctx<'_>, rep: Rep<'_>, sr: &mut Obj) {
    let code = ctx.r.code_text(rep.c(1));
    ctx.mapped_code(sr, "priority", code, rep.pos, "ServiceRequest.priority", vocab::request_priority);
}

/// TQ1 to the timing of a ServiceRequest (the IG's TQ1[ServiceRequest]): TQ1-7 and TQ1-8
/// (start and end) its `occurrencePeriod`, or `occurrenceDateTime` with a start only, unless
/// the request already has an occurrence (OBR-6, an earlier TQ1: then they are reported);
/// TQ1-9 (priority, table 0485) its `priority`, unless it has one.
fn order_timing(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, entry: usize) {
    let mut mapped = vec![1];
    let start = ctx.r.first(seg, 7).and_then(|rep| ctx.datetime(rep, 1, "ServiceRequest.occurrencePeriod.start"));
    let end = ctx.r.first(seg, 8).and_then(|rep| ctx.datetime(rep, 1, "ServiceRequest.occurrencePeriod.end"));
    let sr = ctx.entry_mut(entry);
    let has_occurrence = sr.has("occurrenceDateTime") || sr.has("occurrencePeriod") || sr.has("occurrenceTiming");
    if !has_occurrence && (start.is_some() || end.is_some()) {
        if end.is_some() {
            let period = ctx.period(start, end, seg.position().field(8, 1), "ServiceRequest.occurrencePeriod.end");
            ctx.entry_mut(entry).obj("occurrencePeriod", period);
        } else {
            ctx.entry_mut(entry).opt("occurrenceDateTime", start);
        }
        mapped.extend([7, 8]);
    } else {
        for mut s in [start, end].into_iter().flatten() {
            crate::phi::wipe_string(&mut s);
        }
    }
    if let Some(rep) = ctx.r.first(seg, 9) {
        if !ctx.entry_mut(entry).has("priority") {
            let mut sr = std::mem::take(ctx.entry_mut(entry));
            request_priority(ctx, rep, &mut sr);
            *ctx.entry_mut(entry) = sr;
            mapped.push(9);
        }
    }
    ctx.unmapped_fields(seg, &mapped);
}

/// OBR to DiagnosticReport (ORU).
fn diagnostic_report(
    ctx: &mut Ctx<'_>,
    obr: SegmentRef<'_>,
    order: Option<usize>,
    effective: Option<String>,
) -> Option<usize> {
    let id = ctx.positional_id("DiagnosticReport", obr.index(), 0);
    let mut dr = Ctx::resource("DiagnosticReport", &id);
    if let Some(o) = order {
        let r = ctx.entry_ref(o);
        dr.push_obj("basedOn", reference_obj(&r));
    }
    if let Some(rep) = ctx.r.first(obr, 3) {
        let ident = ctx.identifier_ei(rep, Some("FILL"), "DiagnosticReport.identifier");
        dr.push_obj("identifier", ident);
    }
    match ctx.r.first(obr, 25).and_then(|rep| ctx.r.text(rep.c(1)).map(|c| (rep, c))) {
        Some((rep, code)) => match vocab::report_status(&code) {
            Some(s) => {
                dr.set("status", V::code(s));
            }
            None => {
                ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "DiagnosticReport.status");
                dr.set("status", V::code("unknown"));
                dr.obj("_status", segments::original(code));
            }
        },
        None => {
            dr.set("status", V::code("unknown"));
        }
    }
    if let Some(rep) = ctx.r.first(obr, 24) {
        // OBR-24 (diagnostic service section id, table 0074): the report's category.
        let cc = ctx.codeable(rep, Some("0074"), "DiagnosticReport.category");
        dr.push_obj("category", cc);
    }
    dr.obj("code", required_codeable(ctx, obr, 4, "DiagnosticReport.code"));
    subject(ctx, &mut dr, "subject");
    encounter(ctx, &mut dr, "encounter");
    // OBR-8 (observation end date/time): with OBR-7, the report's effectivePeriod (the IG).
    let end = ctx.r.first(obr, 8).and_then(|rep| ctx.datetime(rep, 1, "DiagnosticReport.effectivePeriod.end"));
    if end.is_some() {
        let period = ctx.period(effective, end, obr.position().field(8, 1), "DiagnosticReport.effectivePeriod.end");
        dr.obj("effectivePeriod", period);
    } else {
        dr.opt("effectiveDateTime", effective);
    }
    if let Some(rep) = ctx.r.first(obr, 22) {
        let t = ctx.instant(rep, 1, "DiagnosticReport.issued");
        dr.opt("issued", t);
    }
    Some(ctx.add("DiagnosticReport", id, dr))
}

fn quantity(ctx: &mut Ctx<'_>, value: String, units: Option<Rep<'_>>, path: &'static str) -> Obj {
    let mut q = Obj::new();
    q.set("value", V::N(value));
    if let Some(u) = units {
        let [c1, c2] = u.components::<2>();
        let code = ctx.r.code_text(c1);
        let text = ctx.r.text(c2);
        let system = ctx.coding_system(u, 3, path);
        let system = ctx.ucum_checked(system, code.as_deref(), u.at(1), path);
        q.opt("unit", text.or_else(|| code.clone()));
        if system.is_some() {
            q.opt("system", system);
            q.opt("code", code);
        }
        ctx.unmapped_components(u, &[1, 2, 3, 4, 5, 6, 7, 8, 9], path);
    }
    q
}

/// OBX to Observation; value[x] by OBX-2.
fn observation(
    ctx: &mut Ctx<'_>,
    seg: SegmentRef<'_>,
    effective: Option<String>,
    order: Option<usize>,
) -> Option<usize> {
    const MAPPED: &[u32] = &[1, 2, 3, 5, 6, 7, 8, 11, 14, 15, 16, 17, 18, 19, 20, 21, 23, 24, 25];
    let id = ctx.positional_id("Observation", seg.index(), 0);
    let mut o = Ctx::resource("Observation", &id);
    // OBX-19: the IG's analysis date-time extension.
    if let Some(dt) = ctx.r.first(seg, 19).and_then(|rep| ctx.datetime(rep, 1, "Observation.extension")) {
        let mut ext = Obj::new();
        ext.set("url", V::code("http://hl7.org/fhir/StructureDefinition/observation-analysis-date-time"));
        ext.set("valueDateTime", V::S(dt));
        o.push_obj("extension", ext);
    }
    if let Some(rep) = ctx.r.first(seg, 21) {
        let ident = ctx.identifier_ei(rep, Some("FILL"), "Observation.identifier");
        o.push_obj("identifier", ident);
    }
    if let Some(s) = order {
        let r = ctx.entry_ref(s);
        o.push_obj("basedOn", reference_obj(&r));
    }
    match ctx.r.first(seg, 11).and_then(|rep| ctx.r.text(rep.c(1)).map(|c| (rep, c))) {
        Some((rep, code)) => match vocab::observation_status(&code) {
            Some(s) => {
                o.set("status", V::code(s));
            }
            None => {
                ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "Observation.status");
                o.set("status", V::code("unknown"));
                o.obj("_status", segments::original(code));
            }
        },
        None => {
            o.set("status", V::code("unknown"));
        }
    }
    o.obj("code", required_codeable(ctx, seg, 3, "Observation.code"));
    subject(ctx, &mut o, "subject");
    encounter(ctx, &mut o, "encounter");
    let eff = ctx.r.first(seg, 14).and_then(|rep| ctx.datetime(rep, 1, "Observation.effectiveDateTime")).or(effective);
    o.opt("effectiveDateTime", eff);
    for rep in ctx.r.reps(seg, 16) {
        if let Some(p) = ctx.practitioner(rep, seg, "Observation.performer") {
            o.push_obj("performer", reference_obj(&p));
        }
    }
    for p in result_producers(ctx, seg) {
        o.push_obj("performer", reference_obj(&p));
    }
    value(ctx, seg, &mut o);
    for rep in ctx.r.reps(seg, 8) {
        if let Some(code) = ctx.r.code_text(rep.c(1)) {
            match vocab::interpretation(&code) {
                Some(c) => o.push_obj(
                    "interpretation",
                    concept("http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation", c, None),
                ),
                None => {
                    ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "Observation.interpretation");
                    o.push_obj("interpretation", concept(&vocab::v2_table_system("0078"), &code, None))
                }
            };
        }
    }
    // OBX-20 and OBX-17 (one each in FHIR: a further repetition is reported).
    for (field, key, path) in [(20, "bodySite", "Observation.bodySite"), (17, "method", "Observation.method")] {
        for (k, rep) in ctx.r.reps(seg, field).enumerate() {
            if k == 0 {
                let cc = ctx.codeable(rep, None, path);
                o.obj(key, cc);
            } else {
                ctx.note(Code::CONVERT_FIELD_UNMAPPED, rep.pos, path);
            }
        }
    }
    // OBX-18: the IG's device (a Device identified by the EI; one in FHIR).
    for (k, rep) in ctx.r.reps(seg, 18).enumerate() {
        if k > 0 {
            ctx.note(Code::CONVERT_FIELD_UNMAPPED, rep.pos, "Observation.device");
        } else if let Some(d) = device(ctx, seg, rep) {
            o.obj("device", reference_obj(&d));
        }
    }
    if let Some(t) = ctx.r.field_text(seg, 7, 1) {
        let mut rr = Obj::new();
        rr.set("text", V::S(t));
        o.push_obj("referenceRange", rr);
    }
    let i = ctx.add("Observation", id, o);
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

/// Makes the Observation of `seg` again, as [`walk`] made it (with `effective` and `order`),
/// with the notes of the NTE segments `notes`: into the entry being made again (see
/// `Ctx::take_resource`).
pub(super) fn observation_again<'m>(
    ctx: &mut Ctx<'m>,
    seg: SegmentRef<'m>,
    effective: Option<String>,
    order: Option<usize>,
    notes: &[SegmentRef<'m>],
) {
    if let Some(entry) = observation(ctx, seg, effective, order) {
        for &nte in notes {
            note(ctx, nte, NoteTarget { entry });
        }
    }
}

/// The CodeableConcept of field `n` for an element FHIR requires: without a code or text there
/// (the field empty, or only delimiters), the data-absent-reason extension, reported as
/// `CONVERT_VALUE_MISSING`.
fn required_codeable(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, n: u32, path: &'static str) -> Obj {
    let cc = ctx.r.first(seg, n).map(|rep| ctx.codeable(rep, None, path)).filter(|cc| !cc.is_empty());
    cc.unwrap_or_else(|| {
        ctx.note(Code::CONVERT_VALUE_MISSING, seg.position().field(n, 0), path);
        absent("unknown")
    })
}

/// The performers an OBX names besides its responsible observers (the IG's performer[2]): the
/// producer (OBX-15, an Organization), and the performing organization (OBX-23 with its address
/// OBX-24), or with a medical director (OBX-25) a PractitionerRole of that Practitioner (code
/// `MDIR`, table 0912) in that Organization. An OBX-24 without an OBX-23 is reported.
fn result_producers(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(org) = ctx.r.first(seg, 15).and_then(|rep| ctx.organization_cwe(rep, seg, "Observation.performer")) {
        out.push(org);
    }
    let address = ctx.r.first(seg, 24);
    let org = match ctx.r.first(seg, 23) {
        Some(rep) => ctx.organization_xon(rep, address, seg, "Observation.performer"),
        None => {
            if let Some(a) = address {
                ctx.note(Code::CONVERT_FIELD_UNMAPPED, a.pos, "Observation.performer");
            }
            None
        }
    };
    let director = ctx.r.first(seg, 25).and_then(|rep| ctx.practitioner(rep, seg, "Observation.performer"));
    match director {
        Some(p) => {
            let mut key = b"MDIR".to_vec();
            key.extend_from_slice(p.as_bytes());
            key.push(0);
            key.extend_from_slice(org.as_deref().unwrap_or_default().as_bytes());
            let role = match ctx.shared_ref("PractitionerRole", &key) {
                Some(r) => r,
                None => {
                    let id = ctx.identity_id("PractitionerRole", &key, seg.index(), 25_000);
                    let mut res = Ctx::resource("PractitionerRole", &id);
                    res.obj("practitioner", reference_obj(&p));
                    if let Some(o) = &org {
                        res.obj("organization", reference_obj(o));
                    }
                    res.push_obj("code", concept("http://terminology.hl7.org/CodeSystem/v2-0912", "MDIR", None));
                    ctx.add_shared("PractitionerRole", key, id, res)
                }
            };
            out.push(role);
        }
        None => out.extend(org),
    }
    out
}

/// EI to a Device identified by it (OBX-18), shared within the message; its reference.
fn device(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, rep: Rep<'_>) -> Option<String> {
    ctx.r.text(rep.c(1))?;
    let mut key = b"EI".to_vec();
    key.extend_from_slice(ctx.r.raw_for_key(rep.bytes));
    ctx.shared("Device", key, seg, rep, |ctx, id| {
        let mut res = Ctx::resource("Device", id);
        let ident = ctx.identifier_ei(rep, None, "Device.identifier");
        res.push_obj("identifier", ident);
        Some(res)
    })
}

fn value(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, o: &mut Obj) {
    let reps: Vec<Rep<'_>> = ctx.r.reps(seg, 5).collect();
    let Some(&first) = reps.first() else { return };
    let ty = ctx.r.field_text(seg, 2, 1).unwrap_or_default();
    let units = ctx.r.first(seg, 6);
    let mut used_reps = 1;
    match ty.as_str() {
        "NM" => match ctx.r.text(first.bytes).as_deref().and_then(decimal) {
            Some(v) => {
                let q = quantity(ctx, v, units, "Observation.valueQuantity");
                o.obj("valueQuantity", q);
            }
            None => {
                ctx.note(Code::CONVERT_VALUE_INVALID, first.pos, "Observation.valueString");
                o.opt("valueString", ctx.r.text(first.bytes));
            }
        },
        "ST" | "TX" | "FT" => {
            let parts: Vec<String> = reps.iter().filter_map(|r| ctx.r.text(r.bytes)).collect();
            used_reps = reps.len();
            if !parts.is_empty() {
                o.set("valueString", V::S(parts.join("\n")));
            }
        }
        "CWE" | "CE" | "CNE" | "CF" => {
            let cc = ctx.codeable(first, None, "Observation.valueCodeableConcept");
            o.obj("valueCodeableConcept", cc);
        }
        "ID" | "IS" => {
            if let Some(code) = ctx.r.code_text(first.bytes) {
                let mut coding = Obj::new();
                coding.set("code", V::S(code));
                let mut cc = Obj::new();
                cc.push_obj("coding", coding);
                o.obj("valueCodeableConcept", cc);
            }
        }
        "SN" => structured_numeric(ctx, first, units, o),
        "DT" | "DTM" | "TS" => {
            let d = ctx.datetime(first, 1, "Observation.valueDateTime");
            o.opt("valueDateTime", d);
        }
        "TM" => match ctx.r.text(first.c(1)).as_deref().and_then(parse_tm) {
            Some((t, had_offset)) => {
                if had_offset {
                    ctx.note(Code::CONVERT_COMPONENT_UNMAPPED, first.pos, "Observation.valueTime");
                }
                o.set("valueTime", V::S(t));
            }
            None => ctx.note(Code::CONVERT_VALUE_INVALID, first.pos, "Observation.valueTime"),
        },
        _ => {
            ctx.note(Code::CONVERT_VALUE_TYPE_UNSUPPORTED, seg.position().field(2, 1), "Observation.value");
            o.obj(
                "dataAbsentReason",
                concept("http://terminology.hl7.org/CodeSystem/data-absent-reason", "unsupported", None),
            );
            used_reps = reps.len();
        }
    }
    for r in reps.iter().skip(used_reps) {
        ctx.note(Code::CONVERT_FIELD_UNMAPPED, r.pos, NOWHERE);
    }
}

fn structured_numeric(ctx: &mut Ctx<'_>, rep: Rep<'_>, units: Option<Rep<'_>>, o: &mut Obj) {
    let comparator = ctx.r.text(rep.c(1));
    let n1 = ctx.r.text(rep.c(2)).as_deref().and_then(decimal);
    let sep = ctx.r.text(rep.c(3));
    let n2 = ctx.r.text(rep.c(4)).as_deref().and_then(decimal);
    let comparator_ok = matches!(comparator.as_deref(), None | Some("=" | "<" | ">" | "<=" | ">="));
    match (sep.as_deref(), n1, n2) {
        (None, Some(v), None) if comparator_ok => {
            let mut q = quantity(ctx, v, units, "Observation.valueQuantity");
            if let Some(c) = comparator.filter(|c| c != "=") {
                q.set("comparator", V::S(c));
            }
            o.obj("valueQuantity", q);
        }
        (Some("-"), Some(low), Some(high)) if comparator.is_none() && ordered_decimals(&low, &high) => {
            let mut r = Obj::new();
            let l = quantity(ctx, low, units, "Observation.valueRange");
            let h = quantity(ctx, high, units, "Observation.valueRange");
            r.obj("low", l);
            r.obj("high", h);
            o.obj("valueRange", r);
        }
        (Some(":" | "/"), Some(num), Some(den)) if comparator.is_none() => {
            let mut r = Obj::new();
            let mut a = Obj::new();
            a.set("value", V::N(num));
            let mut b = Obj::new();
            b.set("value", V::N(den));
            r.obj("numerator", a);
            r.obj("denominator", b);
            o.obj("valueRatio", r);
        }
        _ => {
            ctx.note(Code::CONVERT_VALUE_INVALID, rep.pos, "Observation.valueString");
            let parts: Vec<String> = (1..=4).filter_map(|c| ctx.r.text(rep.c(c))).collect();
            if !parts.is_empty() {
                o.set("valueString", V::S(parts.concat()));
            }
        }
    }
}

/// NTE-3 to an Annotation of the resource before it.
fn note<'m>(ctx: &mut Ctx<'m>, seg: SegmentRef<'m>, target: NoteTarget) {
    let parts: Vec<String> = ctx.r.reps(seg, 3).filter_map(|r| ctx.r.text(r.bytes)).collect();
    let ty = ctx.entries[target.entry].ty;
    let key = match ty {
        "Appointment" => "comment",
        _ => "note",
    };
    let supported = matches!(
        ty,
        "Observation"
            | "ServiceRequest"
            | "AllergyIntolerance"
            | "Specimen"
            | "Immunization"
            | "MedicationRequest"
            | "Appointment"
    );
    if !supported {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    }
    if let Some(recipe) = ctx.recipe_mut(target.entry) {
        // An Observation not held: the note is added when it is made again.
        recipe.notes.push(seg);
        ctx.unmapped_fields(seg, &[1, 3]);
        return;
    }
    if !parts.is_empty() {
        let text = parts.join("\n");
        if key == "comment" {
            ctx.entry_mut(target.entry).set("comment", V::S(text));
        } else {
            let mut a = Obj::new();
            a.set("text", V::S(text));
            ctx.entry_mut(target.entry).push_obj("note", a);
        }
    }
    ctx.unmapped_fields(seg, &[1, 3]);
}

/// SPM to Specimen.
fn specimen(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, order: Option<usize>) -> Option<usize> {
    const MAPPED: &[u32] = &[1, 2, 4, 7, 8, 17, 18];
    let id = ctx.positional_id("Specimen", seg.index(), 0);
    let mut s = Ctx::resource("Specimen", &id);
    if let Some(rep) = ctx.r.first(seg, 2) {
        for (c, ty) in [(1, "PLAC"), (2, "FILL")] {
            let ei = rep.composite(c);
            if !ei.is_empty() {
                let ident = ctx.identifier_ei(ei, Some(ty), "Specimen.identifier");
                s.push_obj("identifier", ident);
            }
        }
    }
    let ty = ctx.r.first(seg, 4).map(|rep| (rep, "0487"));
    specimen_common(ctx, &mut s, ty, ctx.r.first(seg, 18), order);
    let mut col = Obj::new();
    if let Some(rep) = ctx.r.first(seg, 17) {
        let start = ctx.datetime(rep, 1, "Specimen.collection.collectedDateTime");
        let end = ctx.datetime(rep, 2, "Specimen.collection.collectedPeriod");
        match (start, end) {
            (Some(a), Some(b)) => {
                let p = ctx.period(Some(a), Some(b), rep.at(2), "Specimen.collection.collectedPeriod");
                col.obj("collectedPeriod", p);
            }
            (Some(a), None) => {
                col.set("collectedDateTime", V::S(a));
            }
            (None, Some(b)) => {
                let mut p = Obj::new();
                p.set("end", V::S(b));
                col.obj("collectedPeriod", p);
            }
            (None, None) => {}
        }
    }
    if let Some(rep) = ctx.r.first(seg, 7) {
        let cc = ctx.codeable(rep, Some("0488"), "Specimen.collection.method");
        col.obj("method", cc);
    }
    if let Some(rep) = ctx.r.first(seg, 8) {
        let cc = ctx.codeable(rep, Some("0163"), "Specimen.collection.bodySite");
        col.obj("bodySite", cc);
    }
    s.obj("collection", col);
    let i = ctx.add("Specimen", id, s);
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

/// What a Specimen from SPM and one from OBR share: `type` (a CWE, with the table for a code
/// without a system), `subject`, `receivedTime`, `request` the order.
fn specimen_common(
    ctx: &mut Ctx<'_>,
    s: &mut Obj,
    ty: Option<(Rep<'_>, &'static str)>,
    received: Option<Rep<'_>>,
    order: Option<usize>,
) {
    if let Some((rep, table)) = ty {
        let cc = ctx.codeable(rep, Some(table), "Specimen.type");
        s.obj("type", cc);
    }
    subject(ctx, s, "subject");
    if let Some(rep) = received {
        let t = ctx.datetime(rep, 1, "Specimen.receivedTime");
        s.opt("receivedTime", t);
    }
    if let Some(o) = order {
        let r = ctx.entry_ref(o);
        s.push_obj("request", reference_obj(&r));
    }
}

/// OBR-14 and OBR-15 to a Specimen (the IG's OBR[Specimen], for an order without SPM):
/// OBR-15 (SPS) component 1 its `type` (table 0070), 3 (collection method, text) and 4 (body
/// site, table 0163) its `collection`, OBR-14 its `receivedTime`, OBR-7 (with OBR-8) its
/// collection time; `request` the ServiceRequest. Other SPS components are reported.
fn obr_specimen(ctx: &mut Ctx<'_>, obr: SegmentRef<'_>, order: Option<usize>) -> Option<usize> {
    let id = ctx.positional_id("Specimen", obr.index(), 15);
    let mut s = Ctx::resource("Specimen", &id);
    let source = ctx.r.first(obr, 15);
    let ty = source.map(|src| (src.composite(1), "0070"));
    specimen_common(ctx, &mut s, ty, ctx.r.first(obr, 14), order);
    let mut col = Obj::new();
    let start = ctx.r.first(obr, 7).and_then(|rep| ctx.datetime(rep, 1, "Specimen.collection.collectedDateTime"));
    let end = ctx.r.first(obr, 8).and_then(|rep| ctx.datetime(rep, 1, "Specimen.collection.collectedPeriod.end"));
    if end.is_some() {
        let p = ctx.period(start, end, obr.position().field(8, 1), "Specimen.collection.collectedPeriod.end");
        col.obj("collectedPeriod", p);
    } else {
        col.opt("collectedDateTime", start);
    }
    if let Some(src) = source {
        if let Some(method) = ctx.r.text(src.c(3)) {
            let mut cc = Obj::new();
            cc.set("text", V::S(method));
            col.obj("method", cc);
        }
        if !src.composite(4).is_empty() {
            let cc = ctx.codeable(src.composite(4), Some("0163"), "Specimen.collection.bodySite");
            col.obj("bodySite", cc);
        }
        ctx.unmapped_components(src, &[1, 3, 4], "Specimen");
    }
    s.obj("collection", col);
    Some(ctx.add("Specimen", id, s))
}

/// RXA (with its ORC) to Immunization.
fn immunization(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, orc: Option<SegmentRef<'_>>) -> Option<usize> {
    const MAPPED: &[u32] = &[1, 2, 3, 5, 6, 7, 9, 10, 15, 16, 17, 18, 20];
    let id = ctx.positional_id("Immunization", seg.index(), 0);
    let mut im = Ctx::resource("Immunization", &id);
    if let Some(o) = orc {
        for (n, ty) in [(2, "PLAC"), (3, "FILL")] {
            if let Some(rep) = ctx.r.first(o, n) {
                let ident = ctx.identifier_ei(rep, Some(ty), "Immunization.identifier");
                im.push_obj("identifier", ident);
            }
        }
    }
    match ctx.r.first(seg, 20).and_then(|rep| ctx.r.text(rep.c(1)).map(|c| (rep, c))) {
        Some((rep, code)) => match vocab::immunization_status(&code) {
            Some(s) => {
                im.set("status", V::code(s));
                if code == "PA" {
                    im.set("isSubpotent", V::B(true));
                }
            }
            None => {
                ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "Immunization.status");
                im.set("status", V::code("completed"));
                im.obj("_status", segments::original(code));
            }
        },
        // RXA-20 empty: the administration is reported as done (chapter 4A).
        None => {
            im.set("status", V::code("completed"));
        }
    }
    if let Some(rep) = ctx.r.first(seg, 18) {
        let cc = ctx.codeable(rep, Some("0534"), "Immunization.statusReason");
        im.obj("statusReason", cc);
    }
    im.obj("vaccineCode", required_codeable(ctx, seg, 5, "Immunization.vaccineCode"));
    match &ctx.patient {
        Some(p) => {
            im.obj("patient", reference_obj(p));
        }
        None => {
            ctx.note(Code::CONVERT_VALUE_MISSING, seg.position(), "Immunization.patient");
            im.obj("patient", absent("unknown"));
        }
    }
    encounter(ctx, &mut im, "encounter");
    match ctx.r.first(seg, 3).and_then(|rep| ctx.datetime(rep, 1, "Immunization.occurrenceDateTime")) {
        Some(d) => {
            im.set("occurrenceDateTime", V::S(d));
        }
        None => {
            ctx.note(Code::CONVERT_VALUE_MISSING, seg.position().field(3, 0), "Immunization.occurrenceDateTime");
            im.obj("_occurrenceDateTime", absent("unknown"));
        }
    }
    if let Some(rep) = ctx.r.first(seg, 9) {
        match ctx.r.text(rep.c(1)).as_deref() {
            Some("00") => {
                im.set("primarySource", V::B(true));
            }
            Some("01") => {
                im.set("primarySource", V::B(false));
            }
            _ => ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "Immunization.primarySource"),
        }
    }
    im.opt("lotNumber", ctx.r.field_text(seg, 15, 1));
    if let Some(rep) = ctx.r.first(seg, 16) {
        let d = ctx.date(rep, 1, "Immunization.expirationDate");
        im.opt("expirationDate", d);
    }
    if let Some(rep) = ctx.r.first(seg, 17) {
        let name = ctx.r.text(rep.c(2));
        let code = ctx.r.text(rep.c(1));
        if name.is_some() || code.is_some() {
            let key = ctx.r.raw_for_key(rep.bytes).to_vec();
            let oid = ctx.identity_id("Organization", &key, seg.index(), 17);
            let mut org = Ctx::resource("Organization", &oid);
            if let Some(c) = code {
                let mut ident = Obj::new();
                let system = ctx.coding_system(rep, 3, "Immunization.manufacturer");
                ident.opt("system", system);
                ident.set("value", V::S(c));
                org.push_obj("identifier", ident);
            }
            org.opt("name", name);
            let r = ctx.add_shared("Organization", key, oid, org);
            im.obj("manufacturer", reference_obj(&r));
        }
    }
    if let Some(rep) = ctx.r.first(seg, 6) {
        if let Some(v) = ctx.r.text(rep.c(1)).as_deref().and_then(decimal) {
            if v != "999" {
                let units = ctx.r.first(seg, 7);
                let q = quantity(ctx, v, units, "Immunization.doseQuantity");
                im.obj("doseQuantity", q);
            }
        } else if ctx.r.text(rep.c(1)).is_some() {
            ctx.note(Code::CONVERT_VALUE_INVALID, rep.pos, "Immunization.doseQuantity");
        }
    }
    for (seg_of, n, function) in [(Some(seg), 10, "AP"), (orc, 12, "OP")] {
        let Some(s) = seg_of else { continue };
        for rep in ctx.r.reps(s, n) {
            if let Some(p) = ctx.practitioner(rep, s, "Immunization.performer.actor") {
                let mut perf = Obj::new();
                perf.obj("function", concept("http://terminology.hl7.org/CodeSystem/v2-0443", function, None));
                perf.obj("actor", reference_obj(&p));
                im.push_obj("performer", perf);
            }
        }
    }
    let i = ctx.add("Immunization", id, im);
    if let Some(o) = orc {
        ctx.unmapped_fields(o, &[1, 2, 3, 12]);
    }
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

/// RXR to Immunization.route and .site.
fn route(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, imm: usize) {
    if let Some(rep) = ctx.r.first(seg, 1) {
        let cc = ctx.codeable(rep, Some("0162"), "Immunization.route");
        ctx.entry_mut(imm).obj("route", cc);
    }
    if let Some(rep) = ctx.r.first(seg, 2) {
        let cc = ctx.codeable(rep, Some("0163"), "Immunization.site");
        ctx.entry_mut(imm).obj("site", cc);
    }
    ctx.unmapped_fields(seg, &[1, 2]);
}

/// RXO (with its ORC) to MedicationRequest.
fn medication_request(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, orc: Option<SegmentRef<'_>>) -> Option<usize> {
    const MAPPED: &[u32] = &[1, 2, 3, 4, 11, 12, 13];
    let id = ctx.positional_id("MedicationRequest", seg.index(), 0);
    let mut m = Ctx::resource("MedicationRequest", &id);
    if let Some(o) = orc {
        for (n, ty) in [(2, "PLAC"), (3, "FILL")] {
            if let Some(rep) = ctx.r.first(o, n) {
                let ident = ctx.identifier_ei(rep, Some(ty), "MedicationRequest.identifier");
                m.push_obj("identifier", ident);
            }
        }
    }
    let (status, unknown) = status_from_orc(ctx, orc, vocab::medication_request_status, "MedicationRequest.status");
    let status = if status == "revoked" { "cancelled" } else { status };
    m.set("status", V::code(status));
    if let Some(code) = unknown {
        m.obj("_status", segments::original(code));
    }
    m.set("intent", V::code("order"));
    m.obj("medicationCodeableConcept", required_codeable(ctx, seg, 1, "MedicationRequest.medicationCodeableConcept"));
    match &ctx.patient {
        Some(p) => {
            m.obj("subject", reference_obj(p));
        }
        None => {
            ctx.note(Code::CONVERT_VALUE_MISSING, seg.position(), "MedicationRequest.subject");
            m.obj("subject", absent("unknown"));
        }
    }
    encounter(ctx, &mut m, "encounter");
    if let Some(rep) = orc.and_then(|o| ctx.r.first(o, 9)) {
        let d = ctx.datetime(rep, 1, "MedicationRequest.authoredOn");
        m.opt("authoredOn", d);
    }
    if let Some((o, rep)) = orc.and_then(|o| ctx.r.first(o, 12).map(|r| (o, r))) {
        if let Some(p) = ctx.practitioner(rep, o, "MedicationRequest.requester") {
            m.obj("requester", reference_obj(&p));
        }
    }
    let units = ctx.r.first(seg, 4);
    let min = ctx.r.field_text(seg, 2, 1).as_deref().and_then(decimal);
    let max = ctx.r.field_text(seg, 3, 1).as_deref().and_then(decimal);
    let mut dr = Obj::new();
    match (min, max.clone()) {
        (Some(a), Some(b)) if a != b && ordered_decimals(&a, &b) => {
            let mut r = Obj::new();
            let l = quantity(ctx, a, units, "MedicationRequest.dosageInstruction.doseAndRate.doseRange");
            let h = quantity(ctx, b, units, "MedicationRequest.dosageInstruction.doseAndRate.doseRange");
            r.obj("low", l);
            r.obj("high", h);
            dr.obj("doseRange", r);
        }
        (Some(a), _) | (None, Some(a)) => {
            if max.as_deref().is_some_and(|b| !ordered_decimals(&a, b)) {
                // A maximum below the minimum: no range in FHIR (rng-2); the minimum is kept.
                ctx.note(
                    Code::CONVERT_VALUE_INVALID,
                    seg.position().field(3, 1),
                    "MedicationRequest.dosageInstruction",
                );
            }
            let q = quantity(ctx, a, units, "MedicationRequest.dosageInstruction.doseAndRate.doseQuantity");
            dr.obj("doseQuantity", q);
        }
        (None, None) => {}
    }
    if !dr.is_empty() {
        let mut dosage = Obj::new();
        dosage.push_obj("doseAndRate", dr);
        m.push_obj("dosageInstruction", dosage);
    }
    let mut dispense = Obj::new();
    if let Some(r) = ctx.r.field_text(seg, 13, 1) {
        match r.parse::<u32>() {
            Ok(n) => {
                dispense.set("numberOfRepeatsAllowed", V::N(n.to_string()));
            }
            Err(_) => ctx.note(
                Code::CONVERT_VALUE_INVALID,
                seg.position().field(13, 1),
                "MedicationRequest.dispenseRequest.numberOfRepeatsAllowed",
            ),
        }
    }
    if let Some(v) = ctx.r.field_text(seg, 11, 1).as_deref().and_then(decimal) {
        let units = ctx.r.first(seg, 12);
        let q = quantity(ctx, v, units, "MedicationRequest.dispenseRequest.quantity");
        dispense.obj("quantity", q);
    }
    m.obj("dispenseRequest", dispense);
    let i = ctx.add("MedicationRequest", id, m);
    if let Some(o) = orc {
        ctx.unmapped_fields(o, &[1, 2, 3, 5, 9, 12]);
    }
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

/// SCH to Appointment.
fn appointment(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) -> Option<Appt> {
    let id = ctx.positional_id("Appointment", seg.index(), 0);
    let mut a = Ctx::resource("Appointment", &id);
    for (n, ty) in [(1, "PLAC"), (2, "FILL")] {
        if let Some(rep) = ctx.r.first(seg, n) {
            let ident = ctx.identifier_ei(rep, Some(ty), "Appointment.identifier");
            a.push_obj("identifier", ident);
        }
    }
    let event = ctx.message_type.1.clone();
    let by_event = if event == "S15" { "cancelled" } else { "booked" };
    let mut appt = Appt::default();
    appt.at = seg.position();
    appt.status = by_event;
    match ctx.r.first(seg, 25).and_then(|rep| ctx.r.text(rep.c(1)).map(|c| (rep, c))) {
        Some((rep, code)) => match vocab::appointment_status(&code) {
            Some(s) => {
                a.set("status", V::code(s));
                appt.status = s;
                appt.v2_status = Some(code);
            }
            None => {
                ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "Appointment.status");
                a.set("status", V::code(by_event));
                a.obj("_status", segments::original(code));
            }
        },
        None => {
            a.set("status", V::code(by_event));
        }
    }
    let mut mapped: Vec<u32> = vec![1, 2, 7, 8, 9, 10, 11, 16, 25];
    if event == "S15" {
        mapped.push(6);
        if let Some(rep) = ctx.r.first(seg, 6) {
            let cc = ctx.codeable(rep, None, "Appointment.cancelationReason");
            a.obj("cancelationReason", cc);
        }
    }
    if let Some(rep) = ctx.r.first(seg, 8) {
        let cc = ctx.codeable(rep, Some("0277"), "Appointment.appointmentType");
        a.obj("appointmentType", cc);
    }
    if let Some(rep) = ctx.r.first(seg, 7) {
        let cc = ctx.codeable(rep, None, "Appointment.reasonCode");
        a.push_obj("reasonCode", cc);
    }
    let duration = ctx.r.field_text(seg, 9, 1).map(|d| minutes_of(&d, ctx.r.field_text(seg, 10, 1).as_deref()));
    appt.minutes = duration.flatten();
    if let Some(rep) = ctx.r.first(seg, 11) {
        let start = ctx.instant(rep, 4, "Appointment.start");
        let end = ctx.instant(rep, 5, "Appointment.end");
        set_times(ctx, &mut a, start, end, appt.minutes, rep.pos);
        ctx.unmapped_components(rep, &[4, 5], "Appointment.start");
    }
    match (duration, appt.minutes) {
        (_, Some(n)) => {
            a.set("minutesDuration", V::N(n.to_string()));
        }
        (Some(None), _) => {
            ctx.note(Code::CONVERT_VALUE_INVALID, seg.position().field(9, 1), "Appointment.minutesDuration");
        }
        (_, None) => {}
    }
    match &ctx.patient {
        Some(p) => {
            let mut part = Obj::new();
            part.obj("actor", reference_obj(p));
            part.set("status", V::code("accepted"));
            a.push_obj("participant", part);
        }
        None => {
            ctx.note(Code::CONVERT_VALUE_MISSING, seg.position(), "Appointment.participant");
        }
    }
    for rep in ctx.r.reps(seg, 16) {
        if let Some(p) = ctx.practitioner(rep, seg, "Appointment.participant.actor") {
            let mut part = Obj::new();
            part.obj("actor", reference_obj(&p));
            part.set("status", V::code("accepted"));
            a.push_obj("participant", part);
        }
    }
    appt.entry = ctx.add("Appointment", id, a);
    ctx.unmapped_fields(seg, &mapped);
    Some(appt)
}

/// AIP (personnel) or AIL (location) to a participant of the appointment at `entry` (the IG's
/// AIP[Appointment] and AIL[Appointment] maps): `actor` the Practitioner (AIP-3, XCN) or the
/// Location (AIL-3, PL); `type` AIP-4; `period.start` AIP-6/AIL-6 and `period.end` that start
/// moved by the duration (AIP-9/10, AIL-9/10); `status` from the filler status (AIP-12, AIL-12,
/// table 0278): booked, started, complete or overbook `accepted`, pending or waitlist
/// `tentative`, cancelled, deleted, discontinued, no-show or blocked `declined`, none `accepted`
/// (an unknown code is reported and taken as `accepted`). A participant needs an actor or a type
/// (app-1): without either, the segment is reported.
fn resource_participant(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, entry: usize, personnel: bool) {
    let actor = match ctx.r.first(seg, 3) {
        Some(rep) if personnel => ctx.practitioner(rep, seg, "Appointment.participant.actor"),
        Some(rep) => ctx.location(rep, seg, "Appointment.participant.actor"),
        None => None,
    };
    let kind = if personnel { ctx.r.first(seg, 4) } else { None };
    let kind = kind.map(|rep| ctx.codeable(rep, None, "Appointment.participant.type")).filter(|cc| !cc.is_empty());
    if actor.is_none() && kind.is_none() {
        ctx.note(Code::CONVERT_SEGMENT_UNMAPPED, seg.position(), NOWHERE);
        return;
    }
    let mut part = Obj::new();
    if let Some(cc) = kind {
        part.push_obj("type", cc);
    }
    if let Some(a) = &actor {
        part.obj("actor", reference_obj(a));
    }
    let status = match ctx.r.first(seg, 12).and_then(|rep| ctx.r.text(rep.c(1)).map(|c| (rep, c))) {
        None => "accepted",
        Some((rep, code)) => match code.as_str() {
            "Booked" | "Started" | "Complete" | "Overbook" => "accepted",
            "Pending" | "Waitlist" => "tentative",
            "Cancelled" | "Deleted" | "Dc" | "Noshow" | "Blocked" => "declined",
            _ => {
                ctx.note(Code::CONVERT_CODE_UNMAPPED, rep.pos, "Appointment.participant.status");
                "accepted"
            }
        },
    };
    part.set("status", V::code(status));
    let start = ctx.r.first(seg, 6).and_then(|rep| ctx.datetime(rep, 1, "Appointment.participant.period.start"));
    if let Some(start) = start {
        let minutes = ctx.r.field_text(seg, 9, 1).map(|d| minutes_of(&d, ctx.r.field_text(seg, 10, 1).as_deref()));
        let end = match minutes {
            Some(Some(m)) => plus_minutes(&start, m),
            Some(None) => {
                ctx.note(Code::CONVERT_VALUE_INVALID, seg.position().field(9, 1), "Appointment.participant.period.end");
                None
            }
            None => None,
        };
        let mut period = Obj::new();
        period.set("start", V::S(start));
        period.opt("end", end);
        part.obj("period", period);
    }
    ctx.entry_mut(entry).push_obj("participant", part);
    let mapped: &[u32] = if personnel { &[1, 3, 4, 6, 9, 10, 12] } else { &[1, 3, 6, 9, 10, 12] };
    ctx.unmapped_fields(seg, mapped);
}

/// A duration (SCH-9/10, TQ1-6, AIS-7/8) in minutes: a positive whole number, in minutes (the
/// default when no unit is given) or hours. `None` when it is not one.
fn minutes_of(quantity: &str, unit: Option<&str>) -> Option<u32> {
    let n = quantity.trim().parse::<u32>().ok().filter(|n| *n > 0)?;
    let minutes = match unit.map(str::trim) {
        None | Some("MIN" | "min" | "m") => Some(n),
        Some("H" | "h" | "HR" | "hr" | "HRS" | "hrs") => n.checked_mul(60),
        // Seconds (UCUM `s`, ISO+ `S`/`SEC`) when whole minutes; days (`d`).
        Some("s" | "S" | "SEC" | "sec") => (n % 60 == 0).then_some(n / 60),
        Some("d" | "D" | "DAY" | "day") => n.checked_mul(1440),
        Some(_) => None,
    };
    // `minutesDuration` is a positiveInt: at most 2^31 - 1.
    minutes.filter(|&m| i32::try_from(m).is_ok())
}

/// Sets `start` and `end` when both are known (an end derived from `minutes` when missing);
/// a lone one is left out and reported at `at`: FHIR needs both or neither (app-2).
fn set_times(
    ctx: &mut Ctx<'_>,
    a: &mut Obj,
    start: Option<String>,
    end: Option<String>,
    minutes: Option<u32>,
    at: Hl7Position,
) {
    let end = match (&start, end) {
        (Some(s), None) => minutes.and_then(|m| plus_minutes(s, m)),
        (_, end) => end,
    };
    match (start, end) {
        (Some(s), Some(e)) => {
            a.set("start", V::S(s));
            a.set("end", V::S(e));
        }
        (None, None) => {}
        (Some(mut lone), None) => {
            crate::phi::wipe_string(&mut lone);
            ctx.note(Code::CONVERT_TIMING_INCOMPLETE, at, "Appointment.end");
        }
        (None, Some(mut lone)) => {
            crate::phi::wipe_string(&mut lone);
            ctx.note(Code::CONVERT_TIMING_INCOMPLETE, at, "Appointment.start");
        }
    }
}

/// The first TQ1 of an SIU: the appointment's times when SCH-11 gave none (7 start, 8 end) and
/// its duration (6) when SCH-9 gave none.
fn appointment_timing(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, appt: &mut Appt) {
    appt.timed_by_tq1 = true;
    if appt.minutes.is_none()
        && let Some(rep) = ctx.r.first(seg, 6)
        && let Some(q) = ctx.r.text(rep.c(1))
    {
        let unit = ctx.r.text(rep.composite(2).c(1));
        match minutes_of(&q, unit.as_deref()) {
            Some(n) => {
                appt.minutes = Some(n);
                ctx.entry_mut(appt.entry).set("minutesDuration", V::N(n.to_string()));
            }
            None => ctx.note(Code::CONVERT_VALUE_INVALID, rep.pos, "Appointment.minutesDuration"),
        }
    }
    let has_times = ctx.entries[appt.entry].res.has("start");
    if !has_times && (ctx.r.first(seg, 7).is_some() || ctx.r.first(seg, 8).is_some()) {
        let start = ctx.r.first(seg, 7).and_then(|rep| ctx.instant(rep, 1, "Appointment.start"));
        let end = ctx.r.first(seg, 8).and_then(|rep| ctx.instant(rep, 1, "Appointment.end"));
        let mut a = std::mem::take(ctx.entry_mut(appt.entry));
        set_times(ctx, &mut a, start, end, appt.minutes, seg.position().field(7, 0));
        *ctx.entry_mut(appt.entry) = a;
    }
    let mapped: &[u32] = if has_times { &[1, 6] } else { &[1, 6, 7, 8] };
    ctx.unmapped_fields(seg, mapped);
}

/// An appointment without times cannot keep a status that needs them (app-3): it becomes
/// `proposed`, with SCH-25 kept as the status's originalText, and is reported.
fn finish_appointment(ctx: &mut Ctx<'_>, mut appt: Appt) {
    // FHIR needs a participant (1..*): without a patient (reported when SCH was read) and any
    // AIP, AIL or SCH-16, one of unknown type (data-absent-reason) stands in.
    if !ctx.entries[appt.entry].res.has("participant") {
        let mut part = Obj::new();
        part.push_obj("type", absent("unknown"));
        part.set("status", V::code("needs-action"));
        ctx.entry_mut(appt.entry).push_obj("participant", part);
    }
    if ctx.entries[appt.entry].res.has("start") || matches!(appt.status, "proposed" | "cancelled" | "waitlist") {
        return;
    }
    ctx.note(Code::CONVERT_TIMING_INCOMPLETE, appt.at, "Appointment.status");
    let original = appt.v2_status.take();
    let a = ctx.entry_mut(appt.entry);
    a.set("status", V::code("proposed"));
    if let Some(code) = original {
        a.obj("_status", segments::original(code));
    }
}

/// AIS to Appointment.serviceType (and start and end, when SCH-11 and TQ1 gave none: AIS-4, and
/// the end from the duration, SCH-9/10 or else AIS-7/8).
fn service(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, appt: &mut Appt) {
    if let Some(rep) = ctx.r.first(seg, 3) {
        let cc = ctx.codeable(rep, None, "Appointment.serviceType");
        ctx.entry_mut(appt.entry).push_obj("serviceType", cc);
    }
    let mut mapped: &[u32] = &[1, 3, 4];
    if let Some(rep) = ctx.r.first(seg, 4)
        && !ctx.entries[appt.entry].res.has("start")
    {
        let start = ctx.instant(rep, 1, "Appointment.start");
        let own = ctx.r.field_text(seg, 7, 1).map(|d| minutes_of(&d, ctx.r.field_text(seg, 8, 1).as_deref()));
        if appt.minutes.is_none() {
            mapped = &[1, 3, 4, 7, 8];
            if let Some(None) = own {
                ctx.note(Code::CONVERT_VALUE_INVALID, seg.position().field(7, 1), "Appointment.end");
            }
        }
        let minutes = appt.minutes.or(own.flatten());
        let mut a = std::mem::take(ctx.entry_mut(appt.entry));
        set_times(ctx, &mut a, start, None, minutes, rep.pos);
        *ctx.entry_mut(appt.entry) = a;
    }
    ctx.unmapped_fields(seg, mapped);
}

/// TXA to DocumentReference (its content comes from the OBX that follow).
fn document(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>) -> Option<usize> {
    const MAPPED: &[u32] = &[1, 2, 3, 4, 5, 9, 12, 17];
    let id = ctx.positional_id("DocumentReference", seg.index(), 0);
    let mut d = Ctx::resource("DocumentReference", &id);
    if let Some(rep) = ctx.r.first(seg, 12) {
        let ident = ctx.identifier_ei(rep, None, "DocumentReference.masterIdentifier");
        d.obj("masterIdentifier", ident);
    }
    d.set("status", V::code("current"));
    if let Some(rep) = ctx.r.first(seg, 17) {
        let code = ctx.r.text(rep.c(1));
        ctx.mapped_code(&mut d, "docStatus", code, rep.pos, "DocumentReference.docStatus", vocab::doc_status);
    }
    if let Some(rep) = ctx.r.first(seg, 2) {
        let cc = ctx.codeable(rep, Some("0270"), "DocumentReference.type");
        d.obj("type", cc);
    }
    subject(ctx, &mut d, "subject");
    if let Some(rep) = ctx.r.first(seg, 4) {
        let t = ctx.instant(rep, 1, "DocumentReference.date");
        d.opt("date", t);
    }
    for n in [5, 9] {
        for rep in ctx.r.reps(seg, n) {
            if let Some(p) = ctx.practitioner(rep, seg, "DocumentReference.author") {
                d.push_obj("author", reference_obj(&p));
            }
        }
    }
    let content_type = match ctx.r.field_text(seg, 3, 1).as_deref() {
        Some("HTML") => "text/html",
        Some("RTF") => "application/rtf",
        Some("XML") => "application/xml",
        _ => "text/plain",
    };
    let mut att = Obj::new();
    att.set("contentType", V::code(content_type));
    let mut content = Obj::new();
    content.obj("attachment", att);
    d.push_obj("content", content);
    if let Some(e) = &ctx.encounter {
        let mut c = Obj::new();
        c.push_obj("encounter", reference_obj(e));
        d.obj("context", c);
    }
    let i = ctx.add("DocumentReference", id, d);
    ctx.unmapped_fields(seg, MAPPED);
    Some(i)
}

fn document_text(ctx: &mut Ctx<'_>, seg: SegmentRef<'_>, text: &mut Vec<String>) {
    let ty = ctx.r.field_text(seg, 2, 1).unwrap_or_default();
    if matches!(ty.as_str(), "TX" | "FT" | "ST" | "") {
        for rep in ctx.r.reps(seg, 5) {
            if let Some(t) = ctx.r.text(rep.bytes) {
                text.push(t);
            }
        }
        ctx.unmapped_fields(seg, &[1, 2, 3, 4, 5, 11]);
    } else {
        ctx.note(
            Code::CONVERT_VALUE_TYPE_UNSUPPORTED,
            seg.position().field(2, 1),
            "DocumentReference.content.attachment.data",
        );
    }
}

fn finish_document(ctx: &mut Ctx<'_>, doc: usize, mut text: Vec<String>) {
    if text.is_empty() {
        return;
    }
    let mut joined = text.join("\n");
    for t in &mut text {
        zeroize::Zeroize::zeroize(t);
    }
    let data = base64(joined.as_bytes());
    zeroize::Zeroize::zeroize(&mut joined);
    let content_type = "text/plain";
    let mut att = Obj::new();
    att.set("contentType", V::code(content_type));
    att.set("data", V::S(data));
    let mut content = Obj::new();
    content.obj("attachment", att);
    let res = ctx.entry_mut(doc);
    res.set("content", V::A(vec![V::O(content)]));
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

crate::debug_placeholder!(State<'a>, Appt);
#[cfg(test)]
mod tests {
    use super::minutes_of;

    #[test]
    fn minutes_of_units() {
        assert_eq!(minutes_of("30", None), Some(30));
        assert_eq!(minutes_of("2", Some("h")), Some(120));
        assert_eq!(minutes_of("60", Some("s")), Some(1));
        assert_eq!(minutes_of("90", Some("s")), None, "not whole minutes");
        assert_eq!(minutes_of("1", Some("d")), Some(1440));
        assert_eq!(minutes_of("5", Some("M")), None, "month or minute: not guessed");
        assert_eq!(minutes_of("4002083000", None), None, "above a positiveInt");
        assert_eq!(minutes_of("2147483647", None), Some(2_147_483_647));
    }

    #[test]
    fn base64_encodes() {
        assert_eq!(super::base64(b"Man"), "TWFu");
        assert_eq!(super::base64(b"Ma"), "TWE=");
        assert_eq!(super::base64(b"M"), "TQ==");
    }
}

//! Value positions of a FHIR JSON or XML input, found independently of the FHIR parsers, for the
//! no-leak oracle: the byte runs a leak would show, and the marker-injecting rewrite.
//!
//! JSON: every string that is not an object key is a value, except the value of `resourceType`
//! (structure). Numbers and literals stay (digits are never significant to the leak check).
//! XML: every attribute value except namespace declarations, every text run that is not only
//! white space, and CDATA bodies are values; names, comments and processing instructions are
//! structure.
//!
//! Like `values`, deliberately simpler than the parsers under test: an oracle sharing their code
//! would share their bugs. On bytes that are not JSON or XML the walkers still terminate and find
//! approximate values.
//!
//! What it does not do: decide what a leak is (see `oracle`).

use super::values::MARKER_PREFIX;

/// The value runs of a JSON input.
pub(super) fn json_runs(data: &[u8]) -> Vec<Vec<u8>> {
    let mut runs = Vec::new();
    json_walk(data, &mut Vec::new(), |run, _| runs.push(run.to_vec()));
    runs
}

/// The JSON input with every value string rewritten into a unique marker.
pub(super) fn json_markers(data: &[u8]) -> Vec<u8> {
    json_markers_keeping(data, &|_| false)
}

/// [`json_markers`], but value strings for which `keep` is true stay as written (`policy test`
/// keeps declarations, a known code system or extension URL).
pub(crate) fn json_markers_keeping(data: &[u8], keep: &dyn Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 64);
    let mut n = 0u32;
    json_walk(data, &mut out, |run, out| if keep(run) { out.extend_from_slice(run) } else { marker(&mut n, out) });
    out
}

/// The value runs of an XML input.
pub(super) fn xml_runs(data: &[u8]) -> Vec<Vec<u8>> {
    let mut runs = Vec::new();
    xml_walk(data, &mut Vec::new(), |run, _| runs.push(run.to_vec()));
    runs
}

/// The XML input with every value rewritten into a unique marker.
pub(super) fn xml_markers(data: &[u8]) -> Vec<u8> {
    xml_markers_keeping(data, &|_| false)
}

/// [`xml_markers`], but values for which `keep` is true stay as written.
pub(crate) fn xml_markers_keeping(data: &[u8], keep: &dyn Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 64);
    let mut n = 0u32;
    xml_walk(data, &mut out, |run, out| if keep(run) { out.extend_from_slice(run) } else { marker(&mut n, out) });
    out
}

fn marker(n: &mut u32, out: &mut Vec<u8>) {
    *n += 1;
    out.extend_from_slice(MARKER_PREFIX);
    out.extend_from_slice(n.to_string().as_bytes());
    out.push(b'X');
}

/// Copies `data` to `out`, handing each value run (the bytes between the quotes) to `visit`,
/// which writes its replacement.
fn json_walk(data: &[u8], out: &mut Vec<u8>, mut visit: impl FnMut(&[u8], &mut Vec<u8>)) {
    let mut i = 0;
    let mut last_key: &[u8] = b"";
    while i < data.len() {
        let b = data[i];
        if b != b'"' {
            out.push(b);
            i += 1;
            continue;
        }
        // A string: find its closing quote (a backslash escapes the next byte).
        let start = i + 1;
        let mut j = start;
        while j < data.len() && data[j] != b'"' {
            j += if data[j] == b'\\' { 2 } else { 1 };
        }
        let end = j.min(data.len());
        let body = &data[start..end];
        let mut k = end + 1;
        while k < data.len() && data[k].is_ascii_whitespace() {
            k += 1;
        }
        let is_key = data.get(k) == Some(&b':');
        out.push(b'"');
        if is_key || last_key == b"resourceType" {
            out.extend_from_slice(body);
        } else {
            visit(body, out);
        }
        if is_key {
            last_key = body;
        } else {
            last_key = b"";
        }
        if end < data.len() {
            out.push(b'"');
        }
        i = end + 1;
    }
}

/// Copies `data` to `out`, handing each XML value run to `visit`.
fn xml_walk(data: &[u8], out: &mut Vec<u8>, mut visit: impl FnMut(&[u8], &mut Vec<u8>)) {
    let mut i = 0;
    while i < data.len() {
        if data[i] != b'<' {
            // Text up to the next tag.
            let end = memchr::memchr(b'<', &data[i..]).map_or(data.len(), |p| i + p);
            let text = &data[i..end];
            if text.iter().all(u8::is_ascii_whitespace) {
                out.extend_from_slice(text);
            } else {
                visit(text, out);
            }
            i = end;
            continue;
        }
        let rest = &data[i..];
        if rest.starts_with(b"<![CDATA[") {
            let body_start = i + 9;
            let end = memchr::memmem::find(&data[body_start..], b"]]>").map_or(data.len(), |p| body_start + p);
            out.extend_from_slice(b"<![CDATA[");
            visit(&data[body_start..end], out);
            out.extend_from_slice(&data[end..(end + 3).min(data.len())]);
            i = end + 3;
            continue;
        }
        let closer: &[u8] = if rest.starts_with(b"<!--") {
            b"-->"
        } else if rest.starts_with(b"<?") || rest.starts_with(b"<!") {
            b">"
        } else {
            b""
        };
        if !closer.is_empty() {
            let end = memchr::memmem::find(&rest[1..], closer).map_or(data.len(), |p| i + 1 + p + closer.len());
            out.extend_from_slice(&data[i..end.min(data.len())]);
            i = end;
            continue;
        }
        // A tag: names are structure, attribute values are values unless they declare a namespace.
        let mut j = i;
        let mut attr_start = i;
        while j < data.len() && data[j] != b'>' {
            let b = data[j];
            if b == b'"' || b == b'\'' {
                let name = attr_name(&data[attr_start..j]);
                out.push(b);
                let close = memchr::memchr(b, &data[j + 1..]).map_or(data.len(), |p| j + 1 + p);
                let value = &data[j + 1..close];
                if name.starts_with(b"xmlns") {
                    out.extend_from_slice(value);
                } else {
                    visit(value, out);
                }
                if close < data.len() {
                    out.push(b);
                }
                j = close + 1;
                attr_start = j;
                continue;
            }
            out.push(b);
            j += 1;
        }
        if j < data.len() {
            out.push(b'>');
        }
        i = j + 1;
    }
}

/// The attribute name before `="`: the last run of name bytes before the `=`.
fn attr_name(before: &[u8]) -> &[u8] {
    let trimmed = before.trim_ascii_end();
    let trimmed = trimmed.strip_suffix(b"=").unwrap_or(trimmed).trim_ascii_end();
    let start = trimmed.iter().rposition(|b| b.is_ascii_whitespace() || *b == b'<').map_or(0, |p| p + 1);
    &trimmed[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_become_markers_and_keys_stay() {
        let input =
            br#"{"resourceType":"Patient","id":"p1","name":[{"family":"Do\"e","given":["Jane"]}],"active":true}"#;
        let out = String::from_utf8_lossy(&json_markers(input)).into_owned();
        assert_eq!(
            out,
            r#"{"resourceType":"Patient","id":"MKR1X","name":[{"family":"MKR2X","given":["MKR3X"]}],"active":true}"#
        );
        assert_eq!(json_runs(input), vec![b"p1".to_vec(), br#"Do\"e"#.to_vec(), b"Jane".to_vec()]);
    }

    #[test]
    fn xml_values_become_markers_and_namespaces_stay() {
        let input = br#"<?xml version="1.0"?><!-- c --><Patient xmlns="http://hl7.org/fhir"><id value="p1"/><text><div xmlns="http://www.w3.org/1999/xhtml">Jane <b>Doe</b></div></text></Patient>"#;
        let out = String::from_utf8_lossy(&xml_markers(input)).into_owned();
        assert_eq!(
            out,
            r#"<?xml version="1.0"?><!-- c --><Patient xmlns="http://hl7.org/fhir"><id value="MKR1X"/><text><div xmlns="http://www.w3.org/1999/xhtml">MKR2X<b>MKR3X</b></div></text></Patient>"#
        );
    }

    #[test]
    fn walkers_terminate_on_truncated_input() {
        for input in [&b"{\"a\":\"unterminated"[..], b"\"", b"<a b=\"x", b"<![CDATA[x", b"<!--", b"<"] {
            let _ = json_markers(input);
            let _ = xml_markers(input);
            let _ = json_runs(input);
            let _ = xml_runs(input);
        }
    }
}

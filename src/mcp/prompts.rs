//! The prompts (`prompts/list`, `prompts/get`): ready-made instructions for the two tasks an
//! agent most often starts from, "validate and explain" and "de-identify then summarize".
//!
//! A prompt takes no message. It tells the model which tool to call with the message and how to
//! read the reply, so no message value ever passes through a prompt: its only argument is
//! `format`, a format name checked against the tool's `format` enum (an unknown name is refused
//! with a fixed error, never echoed), and completed by `completion/complete` from that enum.
//! A prompt is listed only when the policy lets its tool be called.
//!
//! What it does not do: call a tool (the client's model does), or read the arguments of the
//! tool call it describes.

use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::{Map, Value};

use super::tools::Tool;

/// The name of the "validate and explain" prompt.
pub const VALIDATE_AND_EXPLAIN: &str = "validate_and_explain";
/// The name of the "de-identify then summarize" prompt.
pub const DEIDENTIFY_THEN_SUMMARIZE: &str = "deidentify_then_summarize";
/// The prompts' one argument.
pub const FORMAT: &str = "format";

/// A prompt: its name, title, description, the tool it drives and its text (before the
/// `format` clause is filled in).
struct Spec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    tool: Tool,
    /// The steps; `{call}` is replaced by the call to make.
    text: &'static str,
}

const PROMPTS: [Spec; 2] = [
    Spec {
        name: VALIDATE_AND_EXPLAIN,
        title: "Validate and explain",
        description: "Validate a healthcare message with phiward and explain each finding (code, severity, \
                      position) and how to fix it.",
        tool: Tool::Validate,
        text: "Validate a healthcare message with phiward and explain the result.\n\n\
               1. {call}\n\
               2. Read the reply. `status` is `success` (valid), `verdict` (findings make it invalid, or \
               records of a stream failed) or `failed` (the message could not be read: `code` and `message` \
               say why, `argument` names a bad argument).\n\
               3. Explain the findings in `data.findings` grouped by severity, errors first: for each, its \
               `code`, where it is (`location`: segment, field and component, or a FHIR path) and what it \
               means, then what would fix it. When the reply is `truncated`, say how many findings \
               `finding_totals` counts and call again with its `cursor` for the rest.\n\n\
               The findings name codes and positions only, never the message's values: explain from them.",
    },
    Spec {
        name: DEIDENTIFY_THEN_SUMMARIZE,
        title: "De-identify then summarize",
        description: "Redact a healthcare message with phiward's policy, then summarize the redacted text only.",
        tool: Tool::Redact,
        text: "De-identify a healthcare message with phiward, then summarize it.\n\n\
               1. {call}\n\
               2. When the reply is `failed`, say so with its `code` and `message`, and stop: do not \
               summarize the original instead.\n\
               3. Summarize the redacted message in `data.content` (or `data.content_base64`) only: the \
               kind of message and its events, and the clinical facts that remain. Say which policy \
               redacted it (`data.policy`).\n\n\
               Never use the original message for the summary, and do not try to recover what the \
               policy removed or replaced.",
    },
];

/// The prompts `prompts/list` shows: those whose tool `allowed` lets through.
pub fn definitions(allowed: impl Fn(&str) -> bool) -> Vec<Prompt> {
    PROMPTS
        .iter()
        .filter(|p| allowed(p.tool.as_str()))
        .map(|p| {
            let format = PromptArgument::new(FORMAT)
                .with_title("Format")
                .with_description(format!(
                    "The message's format, when known (detected otherwise): one of {}.",
                    p.tool.format_names().join(", ")
                ))
                .with_required(false);
            Prompt::new(p.name, Some(p.description), Some(vec![format])).with_title(p.title)
        })
        .collect()
}

/// Why `prompts/get` is refused (answered with a fixed JSON-RPC error: nothing is echoed).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No such prompt, or its tool is not allowed.
    Unknown,
    /// `format` is not a string naming a format the tool takes.
    BadFormat,
}

/// The prompt `name` with its arguments, when `allowed` lets its tool through. Arguments other
/// than `format` are ignored.
pub fn get(
    name: &str,
    arguments: Option<&Map<String, Value>>,
    allowed: impl Fn(&str) -> bool,
) -> Result<GetPromptResult, Refused> {
    let spec = PROMPTS.iter().find(|p| p.name == name && allowed(p.tool.as_str())).ok_or(Refused::Unknown)?;
    let format = match arguments.and_then(|a| a.get(FORMAT)) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        // The name written into the text is ours (from the enum), never the client's string.
        Some(Value::String(s)) => {
            Some(spec.tool.format_names().into_iter().find(|n| n == s).ok_or(Refused::BadFormat)?)
        }
        Some(_) => return Err(Refused::BadFormat),
    };
    let tool = spec.tool.as_str();
    let call = match format {
        Some(f) => format!(
            "Call the `{tool}` tool with the message text in `content` (or base64 in `content_base64` for \
             binary input) and `format` set to \"{f}\"."
        ),
        None => format!(
            "Call the `{tool}` tool with the message text in `content` (or base64 in `content_base64` for \
             binary input); its format is detected."
        ),
    };
    let text = spec.text.replace("{call}", &call);
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).with_description(spec.description))
}

/// The values `completion/complete` offers for a prompt's argument: the format names its tool
/// takes. `None` for an unknown prompt or argument.
pub fn completions(name: &str, argument: &str) -> Option<Vec<&'static str>> {
    let spec = PROMPTS.iter().find(|p| p.name == name)?;
    (argument == FORMAT).then(|| spec.tool.format_names())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_is_written_from_the_enum_and_an_unknown_one_is_refused() {
        let all = |_: &str| true;
        let mut args = Map::new();
        args.insert(FORMAT.into(), Value::from("hl7"));
        let got = get(VALIDATE_AND_EXPLAIN, Some(&args), all).expect("a known format");
        let text = serde_json::to_string(&got).expect("serializes");
        assert!(text.contains("`format` set to \\\"hl7\\\""), "{text}");
        args.insert(FORMAT.into(), Value::from("MKR00001X"));
        assert_eq!(get(VALIDATE_AND_EXPLAIN, Some(&args), all).err(), Some(Refused::BadFormat));
        args.insert(FORMAT.into(), Value::from(7));
        assert_eq!(get(VALIDATE_AND_EXPLAIN, Some(&args), all).err(), Some(Refused::BadFormat));
        assert_eq!(get("MKR00002X", None, all).err(), Some(Refused::Unknown));
        let text = serde_json::to_string(&get(DEIDENTIFY_THEN_SUMMARIZE, None, all).expect("no argument"))
            .expect("serializes");
        assert!(text.contains("`redact`") && text.contains("detected"), "{text}");
    }

    #[test]
    fn a_prompt_whose_tool_is_not_allowed_is_neither_listed_nor_given() {
        let no_redact = |t: &str| t != "redact";
        let names: Vec<String> = definitions(no_redact).into_iter().map(|p| p.name).collect();
        assert_eq!(names, [VALIDATE_AND_EXPLAIN]);
        assert_eq!(get(DEIDENTIFY_THEN_SUMMARIZE, None, no_redact).err(), Some(Refused::Unknown));
    }
}

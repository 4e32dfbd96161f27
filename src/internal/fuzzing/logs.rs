//! Log capture for the no-leak oracle: a `tracing` subscriber that records every event at every
//! level into a per-thread buffer, so a harness can check what a run logged.
//!
//! Each event is kept in two parts: its message text, and its field values (field names are
//! static metadata, left out). Messages are program text (`"tool call finished"`), so the plain
//! leak check would mistake their words for values; they get the exact marker check only. Field
//! values get both checks.
//!
//! Installed once per process as the global default (if something else installed one first, the
//! capture is empty). What it does not do: spans (ignored), filtering, or formatting for people.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::sync::Once;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[derive(Default)]
struct Captured {
    messages: Vec<u8>,
    fields: Vec<u8>,
}

thread_local! {
    static BUF: RefCell<Captured> = RefCell::new(Captured::default());
}

struct Capture;

struct Fields<'a> {
    message: &'a mut String,
    fields: &'a mut String,
}

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, "{value:?} ");
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, "{value} ");
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let (mut message, mut fields) = (String::new(), String::new());
        event.record(&mut Fields { message: &mut message, fields: &mut fields });
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.messages.extend_from_slice(message.as_bytes());
            b.messages.push(b'\n');
            b.fields.extend_from_slice(fields.as_bytes());
            b.fields.push(b'\n');
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Installs the capturing subscriber (once).
pub(super) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Capture);
    });
}

/// What this thread logged since the last call: (messages, fields).
pub(super) fn take() -> (Vec<u8>, Vec<u8>) {
    BUF.with(|b| {
        let c = std::mem::take(&mut *b.borrow_mut());
        (c.messages, c.fields)
    })
}

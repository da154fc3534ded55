//! A small pull reader over quick-xml for the Office formats' XML parts:
//! elements by local name (the prefixes differ between producers), text
//! with entities resolved, and a clean end when the part was cut at the
//! byte cap, so each format's reader is only about its own elements.

use std::borrow::Cow;
use std::io::{BufReader, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::zipped::Capped;

/// One thing in the XML, as the readers need it.
#[derive(Debug)]
pub(crate) enum Ev {
    /// An opening tag, by local name, with its attributes; `empty` for
    /// `<x/>`, which has no matching [`Ev::End`].
    Start {
        name: Vec<u8>,
        attrs: Vec<(Vec<u8>, String)>,
        empty: bool,
    },
    /// A closing tag, by local name.
    End { name: Vec<u8> },
    /// Character data, entities resolved.
    Text(String),
    /// The end of the part: `cut` when the byte cap stopped it early
    /// (the XML breaks off there; what came before stands).
    Eof { cut: bool },
}

impl Ev {
    /// Whether this is the start (or empty form) of element `local`.
    pub(crate) fn is_start(&self, local: &[u8]) -> bool {
        matches!(self, Ev::Start { name, .. } if name == local)
    }

    /// Whether this is the end of element `local`.
    pub(crate) fn is_end(&self, local: &[u8]) -> bool {
        matches!(self, Ev::End { name } if name == local)
    }

    /// Attribute `local` of a start tag.
    pub(crate) fn attr(&self, local: &[u8]) -> Option<&str> {
        match self {
            Ev::Start { attrs, .. } => attrs
                .iter()
                .find(|(k, _)| k == local)
                .map(|(_, v)| v.as_str()),
            _ => None,
        }
    }
}

/// Reads events from one XML part.
pub(crate) struct Xml<R: Read> {
    reader: Reader<BufReader<Capped<R>>>,
    buf: Vec<u8>,
}

impl<R: Read> Xml<R> {
    pub(crate) fn new(source: Capped<R>) -> Xml<R> {
        let mut reader = Reader::from_reader(BufReader::new(source));
        let config = reader.config_mut();
        // Producers are sloppy; a mismatched end tag should not lose the
        // rest of a document whose text is all there.
        config.check_end_names = false;
        config.allow_unmatched_ends = true;
        config.allow_dangling_amp = true;
        Xml {
            reader,
            buf: Vec::new(),
        }
    }

    /// The next event; an error is the XML's own (broken markup, broken
    /// deflate), in words for [`crate::DocumentError::Corrupt`].
    pub(crate) fn next(&mut self) -> Result<Ev, String> {
        loop {
            self.buf.clear();
            let event = match self.reader.read_event_into(&mut self.buf) {
                Ok(event) => event,
                Err(e) => {
                    if self.reader.get_ref().get_ref().hit_cap() {
                        return Ok(Ev::Eof { cut: true });
                    }
                    return Err(e.to_string());
                }
            };
            return Ok(match event {
                Event::Start(start) => Ev::Start {
                    name: start.local_name().as_ref().to_vec(),
                    attrs: attributes(&start),
                    empty: false,
                },
                Event::Empty(start) => Ev::Start {
                    name: start.local_name().as_ref().to_vec(),
                    attrs: attributes(&start),
                    empty: true,
                },
                Event::End(end) => Ev::End {
                    name: end.local_name().as_ref().to_vec(),
                },
                Event::Text(text) => Ev::Text(lossy(&text)),
                Event::CData(data) => Ev::Text(lossy(&data)),
                Event::GeneralRef(reference) => {
                    let resolved = match reference.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        // An unknown named entity (XML has five) is kept
                        // as written rather than dropped.
                        _ => {
                            let name = lossy(&reference);
                            quick_xml::escape::resolve_predefined_entity(&name)
                                .map(str::to_owned)
                                .unwrap_or_else(|| format!("&{name};"))
                        }
                    };
                    Ev::Text(resolved)
                }
                Event::Eof => Ev::Eof {
                    cut: self.reader.get_ref().get_ref().hit_cap(),
                },
                Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => continue,
            });
        }
    }
}

fn attributes(start: &BytesStart<'_>) -> Vec<(Vec<u8>, String)> {
    start
        .attributes()
        .with_checks(false)
        .flatten()
        .map(|a| {
            let value = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .unwrap_or_else(|_| Cow::Owned(String::from_utf8_lossy(&a.value).into_owned()));
            (a.key.local_name().as_ref().to_vec(), value.into_owned())
        })
        .collect()
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(xml: &str, cap: usize) -> Vec<String> {
        let mut reader = Xml::new(Capped::new(xml.as_bytes(), cap));
        let mut out = Vec::new();
        loop {
            match reader.next() {
                Ok(Ev::Eof { cut }) => {
                    out.push(format!("eof {cut}"));
                    return out;
                }
                Ok(Ev::Start { name, attrs, .. }) => out.push(format!(
                    "<{} {:?}",
                    String::from_utf8_lossy(&name),
                    attrs
                        .iter()
                        .map(|(k, v)| format!("{}={v}", String::from_utf8_lossy(k)))
                        .collect::<Vec<_>>()
                )),
                Ok(Ev::End { name }) => out.push(format!(">{}", String::from_utf8_lossy(&name))),
                Ok(Ev::Text(t)) => out.push(t),
                Err(e) => {
                    out.push(format!("error {e}"));
                    return out;
                }
            }
        }
    }

    #[test]
    fn names_lose_their_prefix_and_entities_resolve() {
        let got = events(
            r#"<w:p a:b="x&amp;y"><w:t>a &lt;b&gt; &#233;&unknown;</w:t></w:p>"#,
            1 << 20,
        );
        assert_eq!(
            got,
            [
                r#"<p ["b=x&y"]"#,
                "<t []",
                "a ",
                "<",
                "b",
                ">",
                " ",
                "é",
                "&unknown;",
                ">t",
                ">p",
                "eof false"
            ]
        );
    }

    #[test]
    fn a_part_cut_at_the_cap_ends_cleanly() {
        let got = events("<a><b>hello</b><b>world</b></a>", 12);
        assert_eq!(got.last().map(String::as_str), Some("eof true"));
        assert!(got.contains(&"<b []".to_string()));
    }
}

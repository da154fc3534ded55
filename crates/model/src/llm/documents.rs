//! How a PDF travels in each provider's request.
//!
//! The conversation holds a PDF by reference (`types::Pdf`), its base64
//! filled in while a request is built for a model that reads PDFs.
//! Anthropic takes it as a `document` block with a base64
//! `application/pdf` source (its own limits: 32 MB a request, 100 pages);
//! a PDF without its bytes, and every PDF to an OpenAI-compatible server,
//! goes as its text under a line naming it. Either form is built from the
//! stored block alone, so it is the same bytes in every request and the
//! cached prefix holds.

use serde::Serialize;

use super::cache::CacheControl;
use super::types::Pdf;

/// The Anthropic `document` block for `pdf` carrying `data`, with its
/// cache mark.
pub fn anthropic_document<S: serde::Serializer>(
    pdf: &Pdf,
    data: &str,
    mark: Option<CacheControl>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Source<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        media_type: &'static str,
        data: &'a str,
    }
    #[derive(Serialize)]
    struct DocumentBlock<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        source: Source<'a>,
        title: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    }
    DocumentBlock {
        kind: "document",
        source: Source {
            kind: "base64",
            media_type: "application/pdf",
            data,
        },
        title: &pdf.name,
        cache_control: mark,
    }
    .serialize(s)
}

/// The text a request carries for a PDF whose file it does not carry.
pub fn as_text(pdf: &Pdf) -> String {
    format!(
        "[the text of the PDF {} ({} pages), saved at {}]\n{}",
        pdf.name, pdf.pages, pdf.source, pdf.text
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::images::{AnthropicMessages, openai_user_content};
    use crate::llm::types::{Block, Message, Role};
    use serde_json::json;

    fn pdf(data: Option<&str>) -> Block {
        Block::Document(Pdf {
            name: "lease.pdf".into(),
            path: "/h/media/cd.pdf".into(),
            sha256: "cd".into(),
            pages: 3,
            bytes: 900,
            source: "/h/attachments/lease.pdf".into(),
            text: "## page 1\nRent is due monthly.".into(),
            data: data.map(Into::into),
        })
    }

    #[test]
    fn a_pdf_is_a_document_block_or_its_text() {
        let message = Message {
            role: Role::User,
            content: vec![pdf(None), pdf(Some("JVBE"))],
        };
        let anthropic = serde_json::to_value(AnthropicMessages {
            messages: std::slice::from_ref(&message),
            marks: [Some(0), None],
            mark: CacheControl::for_config(&hearth_base::config::PromptCache {
                enabled: true,
                ttl: hearth_base::config::CacheTtl::FiveMinutes,
            }),
        })
        .unwrap();
        let content = &anthropic[0]["content"];
        assert_eq!(content[0]["type"], "text");
        assert!(
            content[0]["text"]
                .as_str()
                .unwrap()
                .ends_with("Rent is due monthly.")
        );
        assert_eq!(
            content[1]["source"],
            json!({ "type": "base64", "media_type": "application/pdf", "data": "JVBE" })
        );
        assert_eq!(content[1]["type"], "document");
        assert_eq!(content[1]["title"], "lease.pdf");
        assert!(content[1].get("cache_control").is_some(), "{content}");
        // OpenAI-compatible servers get the text, whatever the block holds.
        let openai = openai_user_content(&message).unwrap();
        assert!(openai.as_str().unwrap().contains("Rent is due monthly."));
        // Stored, a PDF is a reference: its bytes are never kept.
        let stored = serde_json::to_value(&message.content[1]).unwrap();
        assert_eq!(stored["type"], "document");
        assert_eq!(stored.get("data"), None);
    }
}

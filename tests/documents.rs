//! Documents to the model end to end: the real daemon, the real Telegram
//! and fs plugins, the fake Bot API and the fake model in both providers'
//! shapes, on real files written here (a PDF with text, a scanned PDF, a
//! DOCX, an XLSX). A document that comes with a message reaches the model
//! as its text with the notes on what the `[documents]` caps cut; a PDF
//! goes to Anthropic as a `document` block, the same bytes in every
//! request; a scan is said to be one and its first page shown as an
//! image; a damaged file is a note and the turn still answers. `read_file`
//! answers a document with its text and leaves text files as they were.

use std::time::Duration;

use base64::Engine;
use hearth_tests::documents::{docx, scanned_pdf, text_pdf, xlsx};
use hearth_tests::fake_llm::{
    FakeLlm, anthropic_text, anthropic_tool_use, openai_text, openai_tool_call,
};
use hearth_tests::fake_telegram::FakeTelegram;
use hearth_tests::images::{images_in, jpeg};
use hearth_tests::{Daemon, Hearth, call_err, call_ok, plugin};
use serde_json::{Value, json};

const TOKEN: &str = "4242:test-token";
const OWNER: i64 = 1001;
const WAIT: Duration = Duration::from_secs(60);
const PDF: &str = "application/pdf";
const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A home with the Telegram channel and the fake model.
struct Bot {
    /// First, so the daemon stops before its fakes and home go.
    _daemon: Daemon,
    telegram: FakeTelegram,
    llm: FakeLlm,
    _home: Hearth,
}

impl Bot {
    /// A bot on `provider` with `extra` config (`[documents]`), answering
    /// `replies` messages.
    fn start(provider: &str, extra: &str, replies: usize) -> Bot {
        let telegram = FakeTelegram::start(TOKEN);
        let llm = FakeLlm::start();
        let base = match provider {
            "openai" => format!("{}/v1", llm.url()),
            _ => llm.url(),
        };
        let home = Hearth::with_plugins(
            &[plugin("telegram")],
            &format!(
                "{extra}\n[plugins.telegram]\ntoken = {TOKEN:?}\napi_url = {:?}\n\
                 allowed_chat_ids = [{OWNER}]\npoll_timeout_s = 1\npace_chat_ms = 0\n\
                 [llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
                 api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\nvision = true\n",
                telegram.url(),
            ),
        );
        for n in 0..replies {
            llm.push(match provider {
                "openai" => openai_text(&format!("answer {n}")),
                _ => anthropic_text(&format!("answer {n}")),
            });
        }
        let daemon = home.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        });
        Bot {
            _daemon: daemon,
            telegram,
            llm,
            _home: home,
        }
    }

    /// Sends `bytes` as a Telegram document; the model request it made.
    fn document(&self, name: &str, mime: &str, bytes: &[u8]) -> Value {
        let id = self.telegram.add_file(bytes);
        self.send(json!({
            "caption": "have a look",
            "document": { "file_id": id, "file_unique_id": name, "file_name": name,
                          "mime_type": mime, "file_size": bytes.len() },
        }))
    }

    /// Pushes a message with `fields`, waits for the reply; the request.
    fn send(&self, fields: Value) -> Value {
        let before = self.llm.requests().len();
        let replies = self.telegram.sent().len();
        let mut message = json!({
            "message_id": before + 10, "date": 0,
            "chat": { "id": OWNER, "type": "private" },
            "from": { "id": OWNER, "is_bot": false, "first_name": "o" },
        });
        for (k, v) in fields.as_object().expect("fields") {
            message[k] = v.clone();
        }
        self.telegram.push_update(json!({ "message": message }));
        let sent = self.telegram.wait_for_sent(replies + 1, WAIT);
        assert!(sent.len() > replies, "no reply: {sent:#?}");
        let requests = self.llm.requests();
        assert_eq!(requests.len(), before + 1, "one model request per message");
        requests[before].body.clone()
    }
}

/// The newest user message's text, every text part joined.
fn newest_text(body: &Value) -> String {
    let messages = body["messages"].as_array().expect("messages");
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("{other}"),
    }
}

fn sheet(rows: usize) -> Vec<Vec<String>> {
    let mut out = vec![vec!["month".to_owned(), "sold".to_owned()]];
    out.extend((1..rows).map(|r| vec![format!("m{r}"), format!("{}", r * 10)]));
    out
}

#[test]
fn documents_reach_the_model_as_text_with_the_caps_shown() {
    let bot = Bot::start("openai", "[documents]\nmax_pages = 2\nmax_rows = 3\n", 5);
    let pdf = text_pdf(&["Rent is due monthly", "Deposit is two months", "Signed"]);
    let text = newest_text(&bot.document("lease.pdf", PDF, &pdf));
    assert!(text.contains("have a look"), "{text}");
    assert!(
        text.contains("[Attached document: lease.pdf (PDF, 3 pages, "),
        "{text}"
    );
    assert!(text.contains("## page 1\nRent is due monthly"), "{text}");
    assert!(text.contains("Deposit is two months"), "{text}");
    assert!(!text.contains("Signed"), "page 3 is past max_pages: {text}");
    assert!(text.contains("showed 2 of 3 pages"), "{text}");

    let word = docx(&["Dear owner,", "the boiler is fixed."]);
    let text = newest_text(&bot.document("letter.docx", DOCX, &word));
    assert!(
        text.contains("[Attached document: letter.docx (Word document, "),
        "{text}"
    );
    assert!(text.contains("Dear owner,"), "{text}");
    assert!(text.contains("the boiler is fixed."), "{text}");

    let book = xlsx(&sheet(6));
    let text = newest_text(&bot.document("sales.xlsx", XLSX, &book));
    assert!(
        text.contains("[Attached document: sales.xlsx (XLSX spreadsheet, 1 sheet, "),
        "{text}"
    );
    assert!(text.contains("| month | sold |"), "{text}");
    assert!(text.contains("| m2 | 20 |"), "{text}");
    assert!(
        !text.contains("| m4 | 40 |"),
        "row 5 is past max_rows: {text}"
    );
    assert!(text.contains("rows"), "no note on the rows cut: {text}");

    // A CSV is a table too, under the same row cap.
    let csv = "city;people\nOslo;709000\nBergen;291000\nTromsø;78000\nBodø;53000\n";
    let text = newest_text(&bot.document("towns.csv", "text/csv", csv.as_bytes()));
    assert!(
        text.contains("[Attached document: towns.csv (CSV, "),
        "{text}"
    );
    assert!(text.contains("| city | people |"), "{text}");
    assert!(text.contains("| Bergen | 291000 |"), "{text}");
    assert!(!text.contains("Bodø"), "past max_rows: {text}");

    // A damaged PDF is a note, and the turn still answers.
    let text = newest_text(&bot.document("broken.pdf", PDF, b"%PDF-1.4\nnot a pdf at all"));
    assert!(
        text.contains("broken.pdf")
            && text.contains("it could not be read as a document: the PDF is damaged"),
        "{text}"
    );
}

#[test]
fn a_pdf_goes_to_anthropic_as_a_document_block_the_same_in_every_request() {
    let bot = Bot::start("anthropic", "[documents]\npdf_block_pages = 3\n", 3);
    let pdf = text_pdf(&["Invoice 42", "Total 99 EUR"]);
    let first = bot.document("invoice.pdf", PDF, &pdf);
    let blocks = |body: &Value| -> Vec<Value> {
        body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "document")
            .collect()
    };
    let sent = blocks(&first);
    assert_eq!(sent.len(), 1, "{first}");
    let block = &sent[0];
    assert_eq!(block["source"]["type"], "base64");
    assert_eq!(block["source"]["media_type"], "application/pdf");
    assert_eq!(block["title"], "invoice.pdf");
    let data = base64::engine::general_purpose::STANDARD
        .decode(block["source"]["data"].as_str().expect("data"))
        .expect("base64");
    assert_eq!(data, pdf, "the PDF itself goes to the model");
    let text = newest_text(&first);
    assert!(
        text.contains("[Attached PDF: invoice.pdf (2 pages, ")
            && text.contains("sent below as the file"),
        "{text}"
    );
    // The next turn replays the very same block: the cached prefix holds.
    let second = bot.send(json!({ "text": "and the total?" }));
    let again = blocks(&second);
    assert_eq!(again.len(), 1);
    let strip = |b: &Value| {
        let mut b = b.clone();
        b.as_object_mut().expect("block").remove("cache_control");
        b
    };
    assert_eq!(strip(&again[0]), strip(block));
    let first_user = |body: &Value| body["messages"][0]["content"].to_string();
    assert_eq!(
        first_user(&first).replace(",\"cache_control\":{\"type\":\"ephemeral\"}", ""),
        first_user(&second).replace(",\"cache_control\":{\"type\":\"ephemeral\"}", ""),
    );
    // Past pdf_block_pages, a PDF goes as its text.
    let long = text_pdf(&["one", "two", "three", "four"]);
    let third = bot.document("long.pdf", PDF, &long);
    assert_eq!(blocks(&third).len(), 1, "only the earlier PDF is a file");
    let text = newest_text(&third);
    assert!(
        text.contains("[Attached document: long.pdf (PDF, 4 pages, "),
        "{text}"
    );
    assert!(text.contains("## page 4\nfour"), "{text}");
}

#[test]
fn a_scanned_pdf_is_said_to_be_one_and_its_first_page_is_shown() {
    let bot = Bot::start("openai", "", 1);
    let scan = scanned_pdf(&jpeg(600, 800), "DCTDecode", 600, 800, 3);
    let body = bot.document("scan.pdf", PDF, &scan);
    let text = newest_text(&body);
    assert!(
        text.contains("[Attached document: scan.pdf (PDF, 3 pages, "),
        "{text}"
    );
    assert!(
        text.contains("it has no text layer: it is a scan"),
        "{text}"
    );
    assert!(
        text.contains("its first page is shown below as an image"),
        "{text}"
    );
    let images = images_in(&body);
    assert_eq!(images.len(), 1, "{text}");
    assert_eq!(images[0].media_type, "image/jpeg");
    let (w, h) = images[0].size();
    assert!(h > w, "{w}x{h}");
}

#[test]
fn a_scanned_pdf_whose_page_cannot_be_had_says_so() {
    // Anthropic with PDFs as text; the scan's picture is JBIG2, which
    // hearth does not decode.
    let bot = Bot::start("anthropic", "[documents]\npdf_blocks = false\n", 1);
    let scan = scanned_pdf(b"\0\0 fax data", "JBIG2Decode", 60, 80, 1);
    let body = bot.document("fax.pdf", PDF, &scan);
    let text = newest_text(&body);
    assert!(text.contains("it has no text layer"), "{text}");
    assert!(
        text.contains("its first page cannot be shown either: "),
        "{text}"
    );
    assert!(images_in(&body).is_empty());
}

#[test]
fn read_file_answers_a_document_with_its_text_and_leaves_text_as_it_was() {
    let h = Hearth::with_plugins(&[plugin("fs")], "[documents]\nmax_rows = 2\n");
    let home = h.home().canonicalize().expect("home");
    std::fs::write(home.join("lease.pdf"), text_pdf(&["Rent is due monthly"])).unwrap();
    std::fs::write(home.join("letter.docx"), docx(&["Dear owner,"])).unwrap();
    std::fs::write(home.join("sales.xlsx"), xlsx(&sheet(5))).unwrap();
    std::fs::write(
        home.join("scan.pdf"),
        scanned_pdf(&jpeg(60, 80), "DCTDecode", 60, 80, 2),
    )
    .unwrap();
    std::fs::write(home.join("broken.pdf"), b"%PDF-1.4\nnothing else").unwrap();
    std::fs::write(
        home.join("notes.txt"),
        "A PDF starts with %PDF- and a version\n",
    )
    .unwrap();
    let rt = h.runtime();
    let read = |name: &str| call_ok(&rt, "read_file", json!({ "path": name }));

    let pdf = read("lease.pdf");
    assert_eq!(pdf["encoding"], "document", "{pdf}");
    assert_eq!(pdf["kind"], "PDF");
    assert_eq!(pdf["pages"], 1);
    assert_eq!(pdf["content"], "## page 1\nRent is due monthly");
    assert_eq!(pdf["truncated"], false);

    let word = read("letter.docx");
    assert_eq!(word["kind"], "DOCX", "{word}");
    assert_eq!(word["content"], "Dear owner,");

    // A long document is cut within what a tool's answer shows the model,
    // with the note on the cut at its end.
    let long: Vec<String> = (0..4_000).map(|i| format!("Paragraph {i}.")).collect();
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    std::fs::write(home.join("long.docx"), docx(&long)).unwrap();
    let cut = read("long.docx");
    assert_eq!(cut["truncated"], true, "{cut}");
    let content = cut["content"].as_str().expect("content");
    assert!(content.chars().count() < 21_000, "{}", content.len());
    assert!(content.starts_with("Paragraph 0."), "{content}");
    assert!(content.ends_with(']'), "no note at the end");

    let book = read("sales.xlsx");
    assert_eq!(book["kind"], "XLSX", "{book}");
    assert_eq!(book["sheets"], 1);
    assert_eq!(book["truncated"], true);
    let content = book["content"].as_str().expect("content");
    assert!(content.contains("| month | sold |"), "{content}");
    assert!(!content.contains("m3"), "past max_rows: {content}");
    assert!(content.contains("rows"), "no note on the cut: {content}");

    let scan = read("scan.pdf");
    assert_eq!(scan["scanned"], true, "{scan}");
    assert_eq!(scan["image"]["page"], 1, "the host is to show page 1");
    assert_eq!(scan["pages"], 2);
    assert!(
        scan["content"]
            .as_str()
            .expect("content")
            .contains("no text layer"),
        "{scan}"
    );

    let broken = call_err(&rt, "read_file", json!({ "path": "broken.pdf" }));
    assert!(
        broken.contains("broken.pdf cannot be read as a document: the PDF is damaged"),
        "{broken}"
    );

    // Raw text is unchanged, even one that mentions %PDF-.
    let text = read("notes.txt");
    assert_eq!(text["encoding"], "text");
    assert_eq!(text["content"], "A PDF starts with %PDF- and a version\n");
    rt.stop(Duration::from_secs(5)).unwrap();
}

#[test]
fn a_bad_documents_cap_is_refused_naming_its_key() {
    let h = Hearth::new("[documents]\nmax_rows = 0\n");
    let out = h.cmd(&["check"]).fails();
    assert!(out.contains("documents.max_rows"), "{out}");
    assert!(out.contains("must be 1 to 1000000, not 0"), "{out}");
}

#[test]
fn read_file_on_a_scan_shows_the_model_its_first_page() {
    for provider in ["anthropic", "openai"] {
        let llm = FakeLlm::start();
        let base = match provider {
            "openai" => format!("{}/v1", llm.url()),
            _ => llm.url(),
        };
        let home = Hearth::new(&format!(
            "[llm]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\nvision = true\n"
        ));
        let scan = scanned_pdf(&jpeg(300, 400), "DCTDecode", 300, 400, 2);
        std::fs::write(home.home().join("scan.pdf"), scan).unwrap();
        let args = json!({ "path": "scan.pdf" });
        llm.push(match provider {
            "openai" => openai_tool_call("call_1", "read_file", &args),
            _ => anthropic_tool_use(None, "toolu_1", "read_file", &args),
        });
        llm.push(match provider {
            "openai" => openai_text("a scanned letter"),
            _ => anthropic_text("a scanned letter"),
        });
        let _daemon = home.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        });
        let out = home.chat("what is scan.pdf?");
        assert_eq!(out.ok().trim(), "a scanned letter", "{provider}");
        let requests = llm.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        let body = &requests[1].body;
        let images = images_in(body);
        assert_eq!(images.len(), 1, "{provider}: {body}");
        let (w, h) = images[0].size();
        assert!(h > w, "{provider}: {w}x{h}");
        assert!(
            body.to_string()
                .contains("the scan's first page is shown after the tool results"),
            "{provider}"
        );
    }
}

//! Voice in and voice out, end to end: the real daemon and channel
//! plugins, the fake Bot API, signal-cli and model, a fake OpenAI audio API
//! (`support/fake_speech.rs`), and real audio made at test time with
//! espeak-ng, opusenc and ffmpeg, checked with ffprobe and opusinfo.

use std::ffi::OsStr;

use std::time::{Duration, Instant};

use hearth_tests::audio::{self, Probe};
use hearth_tests::browser::Browser;
use hearth_tests::canvas::{self, Canvas};
use hearth_tests::fake_llm::{FakeLlm, Reply, anthropic_text, anthropic_tool_use};
use hearth_tests::fake_signal::FakeSignal;
use hearth_tests::fake_speech::{FakeSpeech, SpeechRequest};
use hearth_tests::fake_telegram::Sent;
use hearth_tests::telegram_home::{OWNER, TelegramHome};
use hearth_tests::{Daemon, Hearth, plugin};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(40);
/// The transcription key, by the name the config gives its variable.
const STT_KEY: &str = "sk-stt-never-shown-0123456789";

/// `[stt]` for `speech`, with `keys` added.
fn stt(speech: &FakeSpeech, keys: &str) -> String {
    format!(
        "[stt]\nbase_url = {:?}\nmodel = \"whisper-1\"\nmax_retries = 0\n{keys}\n",
        speech.url()
    )
}

/// `[tts]` for `speech`, with `keys` added.
fn tts(speech: &FakeSpeech, keys: &str) -> String {
    format!("[tts]\nbase_url = {:?}\n{keys}\n", speech.url())
}

/// Starts `home`'s daemon with the test keys, and, when `ffmpeg` is false,
/// a `PATH` without ffmpeg.
fn start(home: &Hearth, ffmpeg: bool) -> Daemon {
    let empty = tempfile::tempdir().expect("an empty PATH directory");
    // The directory may go once the daemon runs: PATH only has to lack ffmpeg.
    home.daemon_with(|cmd| {
        cmd.env("HEARTH_TEST_API_KEY", "sk-test")
            .env("HEARTH_TEST_STT_KEY", STT_KEY);
        if !ffmpeg {
            cmd.env("PATH", empty.path());
        }
    })
}

/// Every text the model was sent in messages, joined by newlines.
fn model_input(llm: &FakeLlm) -> String {
    fn texts(value: &Value, out: &mut String) {
        match value {
            Value::String(text) => {
                out.push_str(text);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
            Value::Object(fields) => fields.values().for_each(|v| texts(v, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    for request in llm.requests() {
        texts(&request.body["messages"], &mut out);
    }
    out
}

/// The text of the last message the model was last sent.
fn last_message(llm: &FakeLlm) -> String {
    let requests = llm.requests();
    let last = requests.last().expect("a model request");
    let message = last.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("a message");
    message["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_else(|| message["content"].as_str().unwrap_or_default().to_owned())
}

/// Waits until `done` holds, failing with `what` after [`WAIT`].
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The attachments column of the inbox, oldest first.
fn inbox_attachments(home: &Hearth) -> Vec<Value> {
    let db = home.db();
    let mut query = db
        .prepare("SELECT attachments FROM inbox WHERE attachments IS NOT NULL ORDER BY id")
        .unwrap();
    query
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|a| serde_json::from_str(&a.unwrap()).unwrap())
        .collect()
}

/// The one transcription request, checked to be a real audio file.
fn the_transcription(speech: &FakeSpeech) -> (SpeechRequest, Probe) {
    let requests = speech.requests_to("transcriptions");
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let request = requests.into_iter().next().unwrap();
    assert_eq!(request.status, 200, "{request:#?}");
    let probe = request
        .probe
        .clone()
        .expect("the fake probed the upload")
        .expect("the upload is audio ffprobe reads");
    (request, probe)
}

#[test]
fn a_telegram_voice_note_reaches_the_model_as_its_transcript() {
    // OpenAI takes the voice note's Ogg/Opus as it is; a whisper.cpp
    // server reads only WAV, so hearth converts it with ffmpeg.
    let cases = [
        (
            "openai",
            FakeSpeech::start().with_key(STT_KEY),
            "api_key_env = \"HEARTH_TEST_STT_KEY\"",
            "voice.ogg",
            "opus",
            48_000,
        ),
        (
            "whisper.cpp",
            FakeSpeech::accepting(&["wav"]),
            "formats = [\"wav\"]",
            "voice.wav",
            "pcm_s16le",
            16_000,
        ),
    ];
    let said = "remind me to buy milk tomorrow";
    let voice = audio::ogg_opus(said);
    for (server, speech, keys, file_name, codec, rate) in cases {
        speech.push_transcript(said);
        let t = TelegramHome::new("", &stt(&speech, keys));
        t.llm.push(anthropic_text("Noted: milk, tomorrow."));
        let daemon = start(&t.home, true);
        t.telegram.push_voice(OWNER, OWNER, &voice, 3);
        let sent = t.wait_sent_to(OWNER, 1);
        assert_eq!(sent[0].text, "Noted: milk, tomorrow.", "{server}");

        let (request, probe) = the_transcription(&speech);
        let file = request.file.as_ref().unwrap();
        assert_eq!(file.0, file_name, "{server}");
        assert_eq!(
            (probe.codec.as_str(), probe.sample_rate),
            (codec, rate),
            "{server}: {probe:?}"
        );
        assert_eq!(probe.channels, 1, "{server}");
        assert!(probe.seconds > 1.0, "{server}: {probe:?}");
        assert_eq!(request.fields["model"], "whisper-1");
        assert_eq!(request.fields["response_format"], "json");
        if server == "openai" {
            assert_eq!(
                request.authorization.as_deref(),
                Some(&*format!("Bearer {STT_KEY}"))
            );
        } else {
            assert_eq!(request.authorization, None, "no key is named");
        }

        let input = model_input(&t.llm);
        assert!(
            input.contains("[Voice message (voice.ogg, audio/ogg"),
            "{server}: {input}"
        );
        assert!(input.contains(said), "{server}: {input}");
        let stored = inbox_attachments(&t.home);
        assert_eq!(stored[0][0]["transcript"], said, "{stored:?}");
        assert_eq!(stored[0][0]["voice"], true, "{stored:?}");
        let logs = daemon.logs().join("\n");
        assert!(!logs.contains(STT_KEY), "the key reached the log");
        assert!(!input.contains(STT_KEY), "the key reached the model");
    }
}

#[test]
fn a_retried_turn_does_not_transcribe_again() {
    let speech = FakeSpeech::start();
    speech.push_transcript("what is the weather");
    let t = TelegramHome::new("", &stt(&speech, ""));
    t.llm.push(Reply::Hang);
    let mut daemon = start(&t.home, true);
    t.telegram
        .push_voice(OWNER, OWNER, &audio::ogg_opus("what is the weather"), 2);
    assert!(
        t.llm.wait_for_requests(1, WAIT),
        "the model was never asked"
    );
    daemon.kill9();

    t.llm.push(anthropic_text("Sunny."));
    let _daemon = start(&t.home, true);
    let sent = t.wait_sent_to(OWNER, 1);
    assert_eq!(sent[0].text, "Sunny.");
    assert_eq!(
        speech.requests_to("transcriptions").len(),
        1,
        "transcribed again after the restart"
    );
    assert!(model_input(&t.llm).contains("what is the weather"));
}

/// Waits for the notice and the reply that follow message number `n`
/// (counting from 1) of the owner's, and returns the notice.
fn notice_and_reply(t: &TelegramHome, n: usize) -> String {
    let sent = t.wait_sent_to(OWNER, 2 * n);
    let last: Vec<&Sent> = sent[2 * n - 2..].iter().collect();
    let notice = last
        .iter()
        .find(|s| s.text.starts_with("[hearth]"))
        .unwrap_or_else(|| panic!("no notice to the owner: {last:#?}"));
    assert!(last.iter().any(|s| s.text == "ok"), "no reply: {last:#?}");
    notice.text.clone()
}

#[test]
fn voice_that_cannot_be_transcribed_gets_a_clear_note_and_the_owner_is_told() {
    let speech = FakeSpeech::start();
    let t = TelegramHome::new("", &stt(&speech, "max_bytes = 200000"));
    let _daemon = start(&t.home, true);
    let mut corrupt = audio::ogg_opus("this will be broken");
    corrupt.truncate(200);
    corrupt.extend((0..4000u32).map(|i| (i * 7919 % 251) as u8));
    let long = audio::speech_wav(&"This sentence is said again and again. ".repeat(6));
    assert!(long.len() > 200_000, "the long WAV is {} bytes", long.len());
    let noise: Vec<u8> = (0..3000u32).map(|i| (i * 31 % 256) as u8).collect();

    // (what is sent, what the note and the notice say)
    type Push<'a> = Box<dyn Fn() -> i64 + 'a>;
    let cases: Vec<(&str, Push, &str)> = vec![
        (
            "a server error",
            Box::new(|| {
                speech.fail_next(
                    500,
                    "The server had an error while processing your request.",
                    "server_error",
                );
                t.telegram
                    .push_voice(OWNER, OWNER, &audio::ogg_opus("hello"), 1)
            }),
            "answered HTTP 500: The server had an error while processing your request. (server_error)",
        ),
        (
            "corrupt audio",
            Box::new(|| t.telegram.push_voice(OWNER, OWNER, &corrupt, 1)),
            "answered HTTP 400: Audio file might be corrupted or unsupported",
        ),
        (
            "an unknown format",
            Box::new(|| {
                t.telegram
                    .push_audio(OWNER, OWNER, &noise, "sound.xyz", "audio/x-unknown")
            }),
            "it is not audio hearth can read (ffmpeg says: Invalid data found when processing input)",
        ),
        (
            "an oversized file",
            Box::new(|| {
                t.telegram
                    .push_audio(OWNER, OWNER, &long, "long.wav", "audio/wav")
            }),
            "over the 200000-byte limit ([stt] max_bytes)",
        ),
    ];
    for (n, (case, push, says)) in cases.iter().enumerate() {
        t.llm.push(anthropic_text("ok"));
        push();
        let notice = notice_and_reply(&t, n + 1);
        assert!(
            notice.contains("could not be transcribed"),
            "{case}: {notice}"
        );
        assert!(notice.contains(says), "{case}: {notice}");
        let asked = last_message(&t.llm);
        assert!(
            asked.contains("could not be transcribed") && asked.contains(says),
            "{case}: the model was not told: {asked}"
        );
    }
    // The daemon keeps serving.
    t.llm.push(anthropic_text("still here"));
    t.telegram.push_message(OWNER, OWNER, "are you there?");
    let sent = t.wait_sent_to(OWNER, 2 * cases.len() + 1);
    assert_eq!(sent.last().unwrap().text, "still here");
}

#[test]
fn a_missing_tool_or_endpoint_is_named_in_the_note() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let wav_only = FakeSpeech::accepting(&["wav"]);
    let unreachable =
        format!("cannot reach the transcription endpoint at {down}/audio/transcriptions");
    let cases = [
        (
            "no ffmpeg",
            stt(&wav_only, "formats = [\"wav\"]"),
            false,
            "does not take ogg files ([stt] formats = [\"wav\"]) and converting it failed: ffmpeg is not installed",
        ),
        (
            "an endpoint that is down",
            format!("[stt]\nbase_url = {down:?}\nmax_retries = 0\n"),
            true,
            unreachable.as_str(),
        ),
        (
            "no [stt]",
            String::new(),
            true,
            "speech-to-text is not configured: add an [stt] section",
        ),
    ];
    for (case, config, ffmpeg, says) in cases {
        let t = TelegramHome::new("", &config);
        t.llm.push(anthropic_text("ok"));
        let _daemon = start(&t.home, ffmpeg);
        t.telegram
            .push_voice(OWNER, OWNER, &audio::ogg_opus("hello there"), 1);
        let notice = notice_and_reply(&t, 1);
        assert!(notice.contains(says), "{case}: {notice}");
        assert!(model_input(&t.llm).contains(says), "{case}");
    }
    assert!(
        wav_only.requests().is_empty(),
        "nothing is sent that the endpoint refuses"
    );
}

#[test]
fn reply_with_voice_sends_a_telegram_voice_message() {
    let short = "It is sunny and twenty one degrees.";
    let long = format!(
        "{short} {}",
        "Here is more detail about the weather. ".repeat(40)
    );
    // (endpoint format, ffmpeg on the daemon's PATH, the reply's text,
    //  whether the chat forbids voice messages, the Bot API method,
    //  whether the text is the caption)
    let cases = [
        ("opus", true, short.to_owned(), false, "sendVoice", true),
        ("mp3", true, short.to_owned(), false, "sendVoice", true),
        ("mp3", false, short.to_owned(), false, "sendAudio", true),
        ("opus", true, long.clone(), false, "sendVoice", false),
        ("opus", true, short.to_owned(), true, "sendDocument", true),
    ];
    for (format, ffmpeg, answer, forbidden, method, captioned) in cases {
        let case = format!(
            "{format}, ffmpeg {ffmpeg}, {} chars, voice forbidden {forbidden}",
            answer.len()
        );
        let speech = FakeSpeech::start();
        let t = TelegramHome::new("", &tts(&speech, &format!("response_format = {format:?}")));
        t.llm.push(anthropic_tool_use(
            None,
            "v1",
            "reply_with_voice",
            &json!({ "text": short }),
        ));
        t.llm.push(anthropic_text(&answer));
        if forbidden {
            t.telegram
                .fail_next("sendVoice", 400, "Bad Request: VOICE_MESSAGES_FORBIDDEN");
        }
        let _daemon = start(&t.home, ffmpeg);
        t.telegram.push_message(OWNER, OWNER, "say the weather");
        wait_until("the voice message", || {
            t.sent_to(OWNER).iter().any(|s| s.file.is_some())
        });
        let sent = t.sent_to(OWNER);
        let voice = sent.iter().find(|s| s.file.is_some()).unwrap();
        assert_eq!(voice.method, method, "{case}: {sent:#?}");
        let bytes = t.telegram.uploaded(voice.message_id).expect("the upload");
        let probe = audio::probe(&bytes).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert!(probe.seconds > 1.0, "{case}: {probe:?}");
        if format == "opus" || ffmpeg {
            let info = audio::opusinfo(&bytes).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(info.contains("Opus"), "{case}: {info}");
            assert_eq!(probe.codec, "opus", "{case}");
            let request = t.telegram.requests_for("sendVoice").remove(0);
            let duration = request.params["duration"].as_i64().unwrap_or(0);
            assert!(
                (1..=30).contains(&duration) && duration as f64 >= probe.seconds.floor(),
                "{case}: duration {duration} for {probe:?}"
            );
        } else {
            assert_eq!(probe.codec, "mp3", "{case}");
        }
        if captioned {
            assert_eq!(sent.len(), 1, "{case}: one message, the voice: {sent:#?}");
            assert_eq!(voice.text, short, "{case}");
        } else {
            assert!(voice.text.is_empty(), "{case}: no caption");
            assert!(
                sent[0].method == "sendMessage" && sent[0].text.starts_with(short),
                "{case}: {sent:#?}"
            );
        }
        let spoken = speech.requests_to("speech");
        assert_eq!(spoken.len(), 1, "{case}");
        assert_eq!(
            Value::Object(spoken[0].fields.clone().into_iter().collect()),
            json!({ "model": "tts-1", "input": short, "voice": "alloy", "response_format": format }),
            "{case}"
        );
        // The text stays in the history: the reply stored and the call.
        let db = t.home.db();
        let stored: String = db
            .query_row(
                "SELECT text FROM outbox WHERE inbox_id IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stored, answer, "{case}");
        let call: String = db
            .query_row(
                "SELECT content FROM messages WHERE content LIKE '%reply_with_voice%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(call.contains(short), "{case}: {call}");
    }
}

#[test]
fn signal_voice_notes_are_heard_and_voice_replies_are_audio_attachments() {
    const ACCOUNT: &str = "+15550000001";
    const NUMBER: &str = "+15550000002";
    let said = "call the plumber on monday";
    let speech = FakeSpeech::start();
    speech.push_transcript(said);
    let llm = FakeLlm::start();
    llm.push(anthropic_tool_use(
        None,
        "v1",
        "reply_with_voice",
        &json!({ "text": "I will remind you." }),
    ));
    llm.push(anthropic_text("I will remind you."));
    let signal = FakeSignal::start(ACCOUNT);
    // Signal's Android app records AAC in ADTS frames, which OpenAI does
    // not take: hearth converts it. A voice note has no file name.
    let mut note = signal.add_attachment(&audio::aac_adts(said), "audio/aac", "note");
    note["filename"] = Value::Null;
    let h = Hearth::with_plugins(
        &[plugin("signal")],
        &format!(
            "[plugins.signal]\nurl = \"{}\"\naccount = \"{ACCOUNT}\"\nallowed_numbers = [\"{NUMBER}\"]\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n{}{}",
            signal.url(),
            llm.url(),
            stt(&speech, ""),
            tts(&speech, ""),
        ),
    );
    let _daemon = start(&h, true);
    assert!(signal.wait_for_streams(1, WAIT), "no event stream");
    signal.push_data_message(NUMBER, json!({ "message": null, "attachments": [note] }));
    let sent = signal.wait_for_sent(2, WAIT);
    assert_eq!(sent.len(), 2, "{sent:#?}");

    let (request, probe) = the_transcription(&speech);
    assert_eq!(request.file.as_ref().unwrap().0, "voice.wav");
    assert_eq!(
        (probe.codec.as_str(), probe.sample_rate),
        ("pcm_s16le", 16_000)
    );
    let input = model_input(&llm);
    assert!(
        input.contains("[Voice message (") && input.contains(said),
        "{input}"
    );

    assert_eq!(sent[0].message, "I will remind you.");
    let (name, mime, _) = &sent[1].attachments[0];
    assert!(
        name.ends_with(".ogg") && mime == "audio/ogg",
        "{:?}",
        sent[1].attachments
    );
    let info = audio::opusinfo(&sent[1].data[0]).expect("valid Ogg/Opus");
    assert!(info.contains("Opus"), "{info}");
}

#[test]
fn a_canvas_recording_is_transcribed_and_its_transcript_is_in_the_history() {
    let said = "add eggs to the shopping list";
    let speech = FakeSpeech::start();
    speech.push_transcript(said);
    let llm = FakeLlm::start();
    llm.push(anthropic_text("Added."));
    let h = Hearth::with_plugins(
        &[plugin("canvas")],
        &format!(
            "{}\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n{}",
            canvas::CONFIG,
            llm.url(),
            stt(&speech, ""),
        ),
    );
    let _daemon = start(&h, true);
    let canvas = Canvas::of(h.home());
    let cookie = canvas.login();
    let recording = audio::webm_opus(said);
    let answer = canvas.request(
        "POST",
        "/upload?name=voice-20250101.webm&voice=1",
        Some(&cookie),
        &[("Content-Type", "audio/webm;codecs=opus")],
        &recording,
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    let upload: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(
        (upload["mime"].as_str(), upload["voice"].as_bool()),
        (Some("audio/webm"), Some(true))
    );

    let (mut ws, _) = canvas.connect();
    let send = json!({ "type": "send", "id": "rec-1", "text": "", "attachments": [upload["id"]] });
    ws.send(&send.to_string());
    ws.wait_for(WAIT, |f| {
        f["type"] == "message" && f["message"]["role"] == "agent"
    });

    let (request, probe) = the_transcription(&speech);
    assert_eq!(request.file.as_ref().unwrap().0, "voice.webm");
    assert_eq!(probe.codec, "opus");
    assert!(model_input(&llm).contains(said));
    // A browser that connects now sees what the recording said.
    let (_, hello) = canvas.connect();
    let mine = hello["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .expect("the recording's message");
    assert_eq!(mine["attachments"][0]["transcript"], said, "{mine}");
    assert!(
        mine["attachments"][0].get("path").is_none(),
        "paths stay on the server"
    );
}

#[test]
fn the_canvas_record_button_sends_a_voice_message_in_chromium() {
    let browser = Browser::new(false);
    let said = "please water the plants";
    let speech = FakeSpeech::start();
    speech.push_transcript(said);
    let llm = FakeLlm::start();
    llm.push(anthropic_text("I will water them."));
    let h = Hearth::with_plugins(
        &[plugin("canvas")],
        &format!(
            "{}\n[llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\n{}",
            canvas::CONFIG,
            llm.url(),
            stt(&speech, ""),
        ),
    );
    let _daemon = start(&h, true);
    let canvas = Canvas::of(h.home());
    let microphone = tempfile::NamedTempFile::with_suffix(".wav").unwrap();
    std::fs::write(microphone.path(), audio::speech_wav(said)).unwrap();

    let env: [(&str, &OsStr); 3] = [
        ("HEARTH_FAKE_AUDIO", microphone.path().as_os_str()),
        ("HEARTH_TRANSCRIPT", said.as_ref()),
        ("HEARTH_REPLY", "I will water them.".as_ref()),
    ];
    browser.run("voice.test.mjs", &canvas, &env, |step| {
        Err(format!("the voice script has no step {step}"))
    });

    // What the browser recorded is real audio: Opus in WebM, as long as
    // the recording was.
    let (request, probe) = the_transcription(&speech);
    assert_eq!(request.file.as_ref().unwrap().0, "voice.webm");
    assert_eq!(probe.codec, "opus", "{probe:?}");
    assert!(probe.seconds > 1.5, "{probe:?}");
    let input = model_input(&llm);
    assert!(
        input.contains("[Voice message (voice-") && input.contains(said),
        "{input}"
    );
}

#[test]
fn check_warns_of_a_missing_key_and_a_missing_ffmpeg() {
    let speech = FakeSpeech::start();
    let h = Hearth::new(&format!(
        "{}{}",
        stt(&speech, "api_key_env = \"HEARTH_NO_SUCH_KEY\""),
        tts(&speech, "")
    ));
    let empty = tempfile::tempdir().unwrap();
    let cases = [
        (std::env::var_os("PATH").unwrap_or_default(), false),
        (empty.path().as_os_str().to_owned(), true),
    ];
    for (path, warns_of_ffmpeg) in cases {
        let out = h.command(&["check"]).env("PATH", &path).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("check passed"), "{said}");
        assert!(
            said.contains(
                "[stt]: the environment variable HEARTH_NO_SUCH_KEY (api_key_env) is not set"
            ),
            "{said}"
        );
        assert_eq!(
            said.contains("ffmpeg is not on PATH"),
            warns_of_ffmpeg,
            "{said}"
        );
        assert!(
            said.contains("reply_with_voice"),
            "the tool is listed: {said}"
        );
    }
}

//! `reply_with_voice`: the agent speaks its reply.
//!
//! The text goes to the `[tts]` endpoint; the audio is saved under
//! `$HEARTH_HOME/voice` and put on the turn's reply as an attachment
//! flagged as voice, which the turn collects as it collects `attach_file`'s
//! files. The reply's text stays what the model writes: the history keeps
//! it, and the channel sends it as the voice message's caption (Telegram,
//! when short) or beside the audio.

use serde_json::{Value, json};

use hearth_sdk::protocol::{Risk, ToolSpec};

use hearth_model::speech::Speech;

/// The tool's name; the turn collects its results as attachments.
pub const REPLY_WITH_VOICE: &str = "reply_with_voice";

/// Its spec.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: REPLY_WITH_VOICE.into(),
        description: "Speaks `text` and sends the recording with your reply as a voice message. \
                      Then write your reply as usual: it goes with the audio."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "text": { "type": "string", "minLength": 1, "maxLength": 100000 }
            },
            "required": ["text"],
            "additionalProperties": false
        }),
        risk: Risk::Read,
        targets: Default::default(),
    }
}

/// Speaks `args.text`; the result's `attached` is the voice file for the
/// reply.
pub fn call(speech: &Speech, args: &Value) -> Result<Value, String> {
    let tts = speech.tts().ok_or(
        "text-to-speech is not configured: the owner can add a [tts] section to hearth.toml",
    )?;
    let text = args["text"].as_str().unwrap_or_default();
    let spoken = tts.speak(text).map_err(|e| e.to_string())?;
    let name = spoken
        .path
        .file_name()
        .map_or_else(|| "voice.ogg".into(), |n| n.to_string_lossy().into_owned());
    let how = if spoken.ogg_opus {
        "as a voice message"
    } else {
        "as an audio file (the speech endpoint's format is not Ogg/Opus, and ffmpeg could not convert it)"
    };
    Ok(json!({
        "attached": {
            "id": "",
            "name": name,
            "mime": spoken.mime,
            "size": spoken.size,
            "path": spoken.path.display().to_string(),
            "transcript": text.trim(),
            "voice": true,
        },
        "note": format!(
            "The recording goes out with your reply, {how}. Now write your answer: it is sent with the audio and kept in the history."
        ),
    }))
}

//! Voice messages in a turn: transcribed when the turn takes the message,
//! before the model is called, so it works the same for every channel.
//!
//! A transcript is stored in the message's attachment (the inbox row), so
//! a retried turn, after a crash or a restart, finds it there and does not
//! transcribe again; the channels' history shows it beside the file. A
//! file that cannot be transcribed never goes unmentioned: the model gets
//! a note saying a voice message came and why it could not be heard, and
//! the owner is told in the same chat (of a contact's message, where the
//! owner is reached).

use std::sync::Arc;

use hearth_sdk::protocol::Attachment;

use super::Agent;
use super::history::{Claimed, Speaker};
use hearth_model::speech::{NO_STT, Speech, is_audio};

impl Agent {
    /// The message's files, audio ones with their transcripts, and the
    /// notes for the model about audio that could not be transcribed.
    pub(super) async fn hear(&self, claimed: &Claimed) -> (Vec<Attachment>, String) {
        let mut files = claimed.attachments.clone();
        let mut notes = String::new();
        let mut heard = false;
        let speech = self.base.tools.speech().cloned();
        for file in files
            .iter_mut()
            .filter(|f| is_audio(f) && f.transcript.is_none())
        {
            match transcribe(speech.clone(), file.path.clone()).await {
                Ok(transcript) => {
                    tracing::info!(
                        inbox = claimed.id,
                        file = %file.name,
                        chars = transcript.chars().count(),
                        "voice message transcribed"
                    );
                    file.transcript = Some(transcript);
                    heard = true;
                }
                Err(why) => {
                    tracing::warn!(inbox = claimed.id, file = %file.name, "voice message not transcribed: {why}");
                    notes.push_str(&format!(
                        "\n\n[hearth: a voice message or audio file came with this message ({}, saved at {}), \
                         but it could not be transcribed: {why}. The owner has been told.]",
                        file.name, file.path
                    ));
                    if !claimed.retried {
                        self.tell_owner(claimed, file, &why);
                    }
                }
            }
        }
        if heard && let Err(e) = self.base.conversations.set_attachments(claimed.id, &files) {
            tracing::error!(
                inbox = claimed.id,
                "cannot store the transcripts (a retry would transcribe again): {e}"
            );
        }
        (files, notes)
    }

    /// Tells the owner a voice message was not transcribed: in the chat it
    /// came from, or, for a contact's message, where the owner is reached.
    fn tell_owner(&self, claimed: &Claimed, file: &Attachment, why: &str) {
        let what = if file.voice {
            "voice message"
        } else {
            "audio file"
        };
        let (channel, chat, text) = match &claimed.speaker {
            Speaker::Contact(name) => {
                let (channel, chat) = self.base.reach.owner_address_or_later();
                let text = format!(
                    "[hearth] A {what} from {name} ({}) could not be transcribed: {why}",
                    file.name
                );
                (channel, chat, text)
            }
            _ => (
                claimed.channel.clone(),
                claimed.chat.clone(),
                format!(
                    "[hearth] Your {what} ({}) could not be transcribed: {why}. \
                     The agent knows it came; you can type it instead.",
                    file.name
                ),
            ),
        };
        match self.base.conversations.tell(&channel, &chat, &text) {
            Ok(()) => self.base.router.outbox_wake.notify_one(),
            Err(e) => tracing::error!("cannot tell the owner a voice message was not heard: {e}"),
        }
    }
}

/// How an audio file with a transcript is shown to the model; `None` for
/// any other file.
pub(super) fn heard(file: &Attachment) -> Option<String> {
    let transcript = file.transcript.as_deref()?;
    let what = if file.voice {
        "Voice message"
    } else {
        "Audio file"
    };
    let head = format!(
        "\n\n[{what} ({}, {}, {} bytes, saved at {}), transcribed by speech-to-text",
        file.name, file.mime, file.size, file.path
    );
    Some(if transcript.is_empty() {
        format!("{head}: no words were recognised in it]")
    } else {
        format!("{head}:]\n{transcript}")
    })
}

/// Transcribes the file at `path` on a blocking thread.
async fn transcribe(speech: Option<Arc<Speech>>, path: String) -> Result<String, String> {
    let speech = speech.ok_or(NO_STT)?;
    tokio::task::spawn_blocking(move || {
        let stt = speech.stt()?;
        stt.transcribe(std::path::Path::new(&path))
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("the transcription was lost: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_is_shown_as_what_was_said() {
        let file = |voice, transcript: Option<&str>| Attachment {
            name: "voice.ogg".into(),
            mime: "audio/ogg".into(),
            size: 1234,
            path: "/h/voice.ogg".into(),
            transcript: transcript.map(str::to_owned),
            voice,
            ..Attachment::default()
        };
        let cases = [
            (
                file(true, Some("buy milk")),
                Some(
                    "\n\n[Voice message (voice.ogg, audio/ogg, 1234 bytes, saved at /h/voice.ogg), transcribed by speech-to-text:]\nbuy milk",
                ),
            ),
            (
                file(false, Some("")),
                Some(
                    "\n\n[Audio file (voice.ogg, audio/ogg, 1234 bytes, saved at /h/voice.ogg), transcribed by speech-to-text: no words were recognised in it]",
                ),
            ),
            (file(true, None), None),
        ];
        for (file, shown) in cases {
            assert_eq!(heard(&file).as_deref(), shown, "{file:?}");
        }
    }
}

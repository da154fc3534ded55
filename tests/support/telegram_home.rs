//! A home with the real Telegram plugin against the fake Bot API and the
//! fake model, for tests about who talks to the agents over Telegram
//! (contacts, reminders). The owner is [`OWNER`], named in
//! `[owner.identities]`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_llm::FakeLlm;
use crate::fake_telegram::{FakeTelegram, Sent};
use crate::{Daemon, Hearth, plugin};

/// The bot's token.
pub const TOKEN: &str = "4242:test-token";
/// The owner's Telegram id (and private chat).
pub const OWNER: i64 = 1001;
const WAIT: Duration = Duration::from_secs(30);

/// A home with Telegram and the fake model, and its fakes.
pub struct TelegramHome {
    /// The fake Bot API.
    pub telegram: FakeTelegram,
    /// The fake model.
    pub llm: FakeLlm,
    /// The home.
    pub home: Hearth,
}

impl TelegramHome {
    /// `telegram_keys` adds `[plugins.telegram]` keys, `extra` whole
    /// sections; the allow-list holds the owner and 2002.
    pub fn new(telegram_keys: &str, extra: &str) -> TelegramHome {
        TelegramHome::allowing(&[OWNER, 2002], telegram_keys, extra)
    }

    /// As [`TelegramHome::new`], with `allowed` as the allow-list.
    pub fn allowing(allowed: &[i64], telegram_keys: &str, extra: &str) -> TelegramHome {
        TelegramHome::build(None, TOKEN, allowed, telegram_keys, extra)
    }

    /// As [`TelegramHome::new`], with the home made inside `parent` (a
    /// small file system a test fills, say).
    pub fn inside(parent: &Path, telegram_keys: &str, extra: &str) -> TelegramHome {
        TelegramHome::build(Some(parent), TOKEN, &[OWNER, 2002], telegram_keys, extra)
    }

    /// As [`TelegramHome::new`], with `token` in the config: the fake Bot
    /// API still takes only [`TOKEN`], so another one is refused (401).
    pub fn with_token(token: &str, telegram_keys: &str, extra: &str) -> TelegramHome {
        TelegramHome::build(None, token, &[OWNER, 2002], telegram_keys, extra)
    }

    fn build(
        parent: Option<&Path>,
        token: &str,
        allowed: &[i64],
        telegram_keys: &str,
        extra: &str,
    ) -> TelegramHome {
        let allowed: Vec<String> = allowed.iter().map(i64::to_string).collect();
        let telegram = FakeTelegram::start(TOKEN);
        let llm = FakeLlm::start();
        let config = format!(
            "[plugins.telegram]\ntoken = {token:?}\napi_url = {:?}\n\
             allowed_chat_ids = [{}]\npoll_timeout_s = 1\npace_chat_ms = 0\n{telegram_keys}\n\
             [owner]\nname = \"Sam\"\n[owner.identities]\ntelegram = [\"{OWNER}\"]\n\
             [llm]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
             api_key_env = \"HEARTH_TEST_API_KEY\"\nmax_retries = 0\n{extra}",
            telegram.url(),
            allowed.join(", "),
            llm.url()
        );
        let plugins = [plugin("telegram")];
        let home = match parent {
            Some(parent) => Hearth::with_plugins_in(parent, &plugins, &config),
            None => Hearth::with_plugins(&plugins, &config),
        };
        TelegramHome {
            telegram,
            llm,
            home,
        }
    }

    pub fn start(&self) -> Daemon {
        self.home.daemon_with(|cmd| {
            cmd.env("HEARTH_TEST_API_KEY", "sk-test");
        })
    }

    /// Calls a tool through the running daemon as the owner; its result.
    pub fn tool(&self, name: &str, args: Value) -> Value {
        self.home
            .cmd(&["tool", "call", name, &args.to_string()])
            .json()
    }

    /// Calls a tool that must fail; its error text.
    pub fn tool_fails(&self, name: &str, args: Value) -> String {
        self.home
            .cmd(&["tool", "call", name, &args.to_string()])
            .fails()
    }

    /// Waits until the bot has polled `n` more times, so anything pushed
    /// before has been read and judged.
    pub fn polled(&self, n: usize) {
        let target = self.telegram.requests_for("getUpdates").len() + n;
        let start = Instant::now();
        while self.telegram.requests_for("getUpdates").len() < target {
            assert!(start.elapsed() < WAIT, "the bot stopped polling");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the bot sent to `chat`.
    pub fn sent_to(&self, chat: i64) -> Vec<Sent> {
        self.telegram
            .sent()
            .into_iter()
            .filter(|s| s.chat_id == chat)
            .collect()
    }

    /// Waits until the bot has sent `n` messages to `chat`.
    pub fn wait_sent_to(&self, chat: i64, n: usize) -> Vec<Sent> {
        let start = Instant::now();
        loop {
            let sent = self.sent_to(chat);
            if sent.len() >= n {
                return sent;
            }
            assert!(
                start.elapsed() < WAIT,
                "expected {n} messages to {chat}: {:#?}",
                self.telegram.sent()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

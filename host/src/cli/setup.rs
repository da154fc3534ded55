//! `hearth setup`: from nothing to a first reply. Asks for the model (its
//! provider, address and name), keeps its key in the secret store, checks
//! both with one cheap request, asks for the mode and the owner's time
//! zone, writes `$HEARTH_HOME/hearth.toml` with absolute paths, runs the
//! doctor and offers to install the service.
//!
//! Optionally Telegram: the bot token (kept as a secret too), then the
//! owner's first message to the bot names the owner and the chat allowed.
//!
//! Every question has a default and a flag, so `--yes` with flags runs it
//! from a script: no question is asked, the key (and the bot token) are
//! read from stdin, a line each. At a terminal they are typed without
//! echo; they never go on the command line or into the config.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};

use super::{setup_heartbeat, setup_signal, setup_telegram};
use hearth_base::config::{self, Config};
use hearth_base::secrets::Secrets;

/// What `hearth setup` was told on its command line.
#[derive(clap::Args, Debug, Default)]
pub struct SetupArgs {
    /// The model's provider: anthropic, openai, openrouter, or local (an
    /// OpenAI-compatible server such as Ollama, llama.cpp or vLLM).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model [default: the provider's usual one].
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The API's address [default: the provider's; local: http://127.0.0.1:11434/v1].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Read the key from this environment variable when the daemon runs,
    /// instead of keeping it in the secret store.
    #[arg(long, value_name = "VAR")]
    pub key_env: Option<String>,
    /// development or production [default: production].
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// The owner's time zone, e.g. Europe/Berlin [default: this machine's].
    #[arg(long, value_name = "ZONE")]
    pub timezone: Option<String>,
    /// Ask nothing: take the flags and the defaults; the key comes from
    /// stdin.
    #[arg(long)]
    pub yes: bool,
    /// Replace an existing `$HEARTH_HOME/hearth.toml`.
    #[arg(long)]
    pub force: bool,
    /// Do not check the model with a request (offline set-up).
    #[arg(long)]
    pub no_check: bool,
    /// Set up Telegram too (asked at a terminal).
    #[arg(long)]
    pub telegram: bool,
    /// The Bot API's address (a local Bot API server's).
    #[arg(long, value_name = "URL", default_value = "https://api.telegram.org")]
    pub telegram_api: String,
    /// How long to wait for your first message to the bot, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub telegram_wait: u64,
    /// Set up Signal too, through a running signal-cli daemon (asked at a
    /// terminal; docs/signal.md).
    #[arg(long)]
    pub signal: bool,
    /// signal-cli's `--http` address.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8081")]
    pub signal_url: String,
    /// The Signal account signal-cli holds, e.g. +15550001111.
    #[arg(long, value_name = "NUMBER")]
    pub signal_account: Option<String>,
    /// How long to wait for your first message on Signal, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub signal_wait: u64,
    /// Turn on the heartbeat: every morning the agent goes through
    /// HEARTBEAT.md and speaks only when something needs you (asked at a
    /// terminal).
    #[arg(long)]
    pub heartbeat: bool,
}

/// The providers setup knows, with their defaults.
struct Provider {
    /// What the owner types.
    name: &'static str,
    /// `[llm] provider`: the wire format.
    wire: &'static str,
    /// The default address.
    base_url: &'static str,
    /// The default model.
    model: &'static str,
    /// The secret the key is kept in; `None`: no key (a local server).
    secret: Option<&'static str>,
}

const PROVIDERS: [Provider; 4] = [
    Provider {
        name: "anthropic",
        wire: "anthropic",
        base_url: "https://api.anthropic.com",
        model: "claude-sonnet-4-5",
        secret: Some("ANTHROPIC_API_KEY"),
    },
    Provider {
        name: "openai",
        wire: "openai",
        base_url: "https://api.openai.com/v1",
        model: "gpt-4.1",
        secret: Some("OPENAI_API_KEY"),
    },
    Provider {
        name: "openrouter",
        wire: "openai",
        base_url: "https://openrouter.ai/api/v1",
        model: "anthropic/claude-sonnet-4.5",
        secret: Some("OPENROUTER_API_KEY"),
    },
    Provider {
        name: "local",
        wire: "openai",
        base_url: "http://127.0.0.1:11434/v1",
        model: "llama3.1",
        secret: None,
    },
];

/// Runs `hearth setup`.
pub fn run(args: SetupArgs) -> anyhow::Result<ExitCode> {
    let home = config::fallback_home()?;
    let home = std::path::absolute(&home).unwrap_or(home);
    let path = home.join(config::FILE_NAME);
    let mut ask = Asker::new(args.yes);
    if path.exists() && !args.force {
        let question = format!("{} exists. Replace it?", path.display());
        if args.yes || !ask.confirm(&question, false)? {
            bail!(
                "{} exists; `hearth setup --force` replaces it (your data stays)",
                path.display()
            );
        }
    }
    crate::runtime::create_home(&home)?;

    let names: Vec<&str> = PROVIDERS.iter().map(|p| p.name).collect();
    let chosen = match &args.provider {
        Some(name) => name.clone(),
        None => ask.line(
            &format!("Model provider ({})", names.join(", ")),
            "anthropic",
        )?,
    };
    let provider = PROVIDERS
        .iter()
        .find(|p| p.name == chosen.trim().to_ascii_lowercase())
        .with_context(|| {
            format!(
                "{chosen:?} is not a provider: use one of {}",
                names.join(", ")
            )
        })?;
    let base_url = match &args.base_url {
        Some(url) => url.clone(),
        None if provider.secret.is_none() => {
            ask.line("Address of the server", provider.base_url)?
        }
        None => provider.base_url.to_owned(),
    };
    let model = match &args.model {
        Some(model) => model.clone(),
        None => ask.line("Model", provider.model)?,
    };
    let key = match (provider.secret, &args.key_env) {
        (_, Some(var)) => Key::Env(var.clone()),
        (Some(secret), None) => {
            let value = ask.hidden(&format!("API key (kept as the secret {secret}, not shown)"))?;
            if value.trim().is_empty() {
                bail!("no API key was given: it is needed for {}", provider.name);
            }
            Secrets::open(&home).set(secret, value.trim().as_bytes())?;
            eprintln!("setup: the key is in the secret store as {secret}");
            Key::Secret(secret.to_owned())
        }
        (None, None) => Key::None,
    };
    let mode = match &args.mode {
        Some(mode) => mode.clone(),
        None => ask.line(
            "Mode (production asks before anything risky; development is looser)",
            "production",
        )?,
    };
    if !matches!(mode.as_str(), "production" | "development") {
        bail!("{mode:?} is not a mode: use production or development");
    }
    let zone = match &args.timezone {
        Some(zone) => zone.clone(),
        None => ask.line("Your time zone", &machine_zone())?,
    };
    jiff::tz::TimeZone::get(&zone)
        .with_context(|| format!("{zone:?} is not a time zone (like Europe/Berlin or UTC)"))?;
    let telegram = args.telegram
        || (!args.yes
            && ask.confirm(
                "Set up Telegram (a bot you talk to from your phone)?",
                false,
            )?);
    let telegram = match telegram {
        true => {
            let token = ask.hidden("Bot token from @BotFather (not shown)")?;
            let token = token.trim();
            if token.is_empty() {
                bail!("no bot token was given");
            }
            let learned = setup_telegram::learn_owner(
                &args.telegram_api,
                token,
                std::time::Duration::from_secs(args.telegram_wait),
            )?;
            Secrets::open(&home).set(setup_telegram::TOKEN_SECRET, token.as_bytes())?;
            eprintln!(
                "setup: @{} will answer you (user {}) in chat {}",
                learned.bot, learned.owner, learned.chat
            );
            Some(learned)
        }
        false => None,
    };

    let signal = args.signal
        || (!args.yes
            && ask.confirm(
                "Set up Signal (through a signal-cli daemon, docs/signal.md)?",
                false,
            )?);
    let signal = match signal {
        true => {
            let url = match args.yes {
                true => args.signal_url.clone(),
                false => ask.line("signal-cli's address", &args.signal_url)?,
            };
            let account = match &args.signal_account {
                Some(account) => account.clone(),
                None if args.yes => bail!("--signal needs --signal-account +NUMBER"),
                None => ask.line("The Signal number signal-cli holds", "")?,
            };
            if !account.starts_with('+') || account.len() < 8 {
                bail!("{account:?} is not a phone number like +15550001111");
            }
            let owner = setup_signal::learn_owner(
                &url,
                &account,
                std::time::Duration::from_secs(args.signal_wait),
            )?;
            eprintln!("setup: {account} will answer you ({owner}) on Signal");
            Some((url, account, owner))
        }
        false => None,
    };

    let heartbeat =
        args.heartbeat || (!args.yes && ask.confirm(setup_heartbeat::QUESTION, false)?);

    let mut text = config_text(&home, provider, &base_url, &model, &key, &mode, &zone);
    let mut identities = Vec::new();
    if let Some(learned) = &telegram {
        identities.push(format!("telegram = [\"{}\"]", learned.owner));
    }
    if let Some((_, _, owner)) = &signal {
        identities.push(format!("signal = [{}]", toml_string(owner)));
    }
    if !identities.is_empty() {
        text.push_str(&format!(
            "\n[owner.identities]\n{}\n",
            identities.join("\n")
        ));
    }
    if let Some(learned) = &telegram {
        text.push_str(&telegram_text(learned, &args.telegram_api));
    }
    if let Some((url, account, owner)) = &signal {
        text.push_str(&format!(
            "\n[plugins.signal]\nurl = {}\naccount = {}\nallowed_numbers = [{}]\n",
            toml_string(url),
            toml_string(account),
            toml_string(owner)
        ));
    }
    if heartbeat {
        text.push_str(&setup_heartbeat::config_table());
    }
    let parsed = config::parse(&text, Some(&path))
        .context("the config setup wrote does not load (a bug: please report it)")?;
    if !args.no_check {
        check_model(&parsed)?;
    }
    write_config(&path, &text)?;
    eprintln!("setup: wrote {}", path.display());
    if heartbeat {
        setup_heartbeat::write_starter(&home)?;
    }

    eprintln!("setup: hearth doctor:");
    let doctor = super::doctor::run(Some(&path), config::load(Some(&path)), false);
    if let Err(e) = doctor {
        eprintln!("setup: the doctor could not run: {e:#}");
    }
    if !args.yes
        && ask.confirm(
            "Install hearth as a service for your user (systemd --user)?",
            false,
        )?
    {
        let target = super::service::Target {
            scope: super::service::Scope::User,
            unit_dir: None,
            owner: None,
        };
        super::service::install(&parsed, &target)?;
    }
    eprintln!(
        "setup: done. Start it with `hearth run` (or `systemctl --user start hearth`), then \
         `hearth chat` to talk to it."
    );
    Ok(ExitCode::SUCCESS)
}

/// Where the model's key comes from.
enum Key {
    /// The secret store, under this name.
    Secret(String),
    /// This environment variable of the daemon.
    Env(String),
    /// No key (a local server).
    None,
}

/// The config file setup writes: the model, the owner, the mode, the
/// canvas, every path absolute.
fn config_text(
    home: &Path,
    provider: &Provider,
    base_url: &str,
    model: &str,
    key: &Key,
    mode: &str,
    zone: &str,
) -> String {
    let quote = |s: &str| toml_string(s);
    let key_line = match key {
        Key::Secret(name) => format!("api_key_secret = {}\n", quote(name)),
        Key::Env(var) => format!("api_key_env = {}\n", quote(var)),
        Key::None => String::new(),
    };
    format!(
        "# Written by `hearth setup`; every key is listed, with its default, in\n\
         # config/hearth.example.toml.\n\
         home = {home}\n\
         mode = {mode}\n\
         \n\
         [llm]\n\
         # {name}\n\
         provider = {wire}\n\
         model = {model}\n\
         base_url = {base_url}\n\
         {key_line}\
         \n\
         [owner]\n\
         timezone = {zone}\n\
         \n\
         [plugins.canvas]\n\
         # The web canvas; `hearth canvas-url` prints the login link.\n\
         listen = \"127.0.0.1:8080\"\n",
        home = quote(&home.display().to_string()),
        mode = quote(mode),
        name = provider.name,
        wire = quote(provider.wire),
        model = quote(model),
        base_url = quote(base_url),
        zone = quote(zone),
    )
}

/// The Telegram table: the chat learned, the token by its secret.
fn telegram_text(learned: &setup_telegram::Learned, api: &str) -> String {
    let api_line = match api.trim_end_matches('/') {
        "https://api.telegram.org" => String::new(),
        other => format!("api_url = {}\n", toml_string(other)),
    };
    format!(
        "\n[plugins.telegram]\n\
         # The bot token is the secret named here (`hearth secret set`).\n\
         token_secret = \"{secret}\"\n\
         allowed_chat_ids = [{chat}]\n\
         {api_line}",
        secret = setup_telegram::TOKEN_SECRET,
        chat = learned.chat,
    )
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    // JSON's string escapes are TOML's basic-string escapes.
    serde_json::Value::from(text).to_string()
}

/// One cheap request to the model; the failure in plain words.
fn check_model(config: &Config) -> anyhow::Result<()> {
    let Some(llm) = &config.llm else {
        return Ok(());
    };
    let client = hearth_model::llm::Llm::new(llm)?;
    let runtime = super::client::runtime()?;
    match runtime.block_on(client.check()) {
        Ok(hearth_model::llm::ModelCheck::Known) => {
            eprintln!("setup: {} answers", llm.model);
            Ok(())
        }
        Ok(other) => bail!("the model check failed: {other:?}"),
        Err(e) => bail!(
            "{} at {} did not accept the set-up: {e} ({})",
            llm.model,
            llm.base_url,
            crate::doctor::live::model_fix(&e)
        ),
    }
}

/// Writes the config readable by the owner alone (it names where the
/// secrets are, and the owner may add keys later).
fn write_config(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// This machine's time zone's name, else UTC.
fn machine_zone() -> String {
    jiff::tz::TimeZone::system()
        .iana_name()
        .unwrap_or("UTC")
        .to_owned()
}

/// Asks the owner, or takes the defaults under `--yes`. Questions go to
/// stderr, so stdout stays free for what a script reads.
struct Asker {
    yes: bool,
    terminal: bool,
    input: Box<dyn BufRead>,
}

impl Asker {
    fn new(yes: bool) -> Asker {
        Asker {
            yes,
            terminal: std::io::stdin().is_terminal(),
            input: Box::new(std::io::BufReader::new(std::io::stdin())),
        }
    }

    /// A line, or `default` for an empty answer (and under `--yes`).
    fn line(&mut self, question: &str, default: &str) -> anyhow::Result<String> {
        if self.yes {
            return Ok(default.to_owned());
        }
        eprint!("{question} [{default}]: ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        self.input
            .read_line(&mut answer)
            .context("cannot read the answer")?;
        let answer = answer.trim();
        Ok(if answer.is_empty() { default } else { answer }.to_owned())
    }

    /// Yes or no.
    fn confirm(&mut self, question: &str, default: bool) -> anyhow::Result<bool> {
        let shown = if default { "Y/n" } else { "y/N" };
        let answer = self.line(
            &format!("{question} ({shown})"),
            if default { "y" } else { "n" },
        )?;
        Ok(answer.to_ascii_lowercase().starts_with('y'))
    }

    /// A secret: typed without echo at a terminal, else the next line of
    /// stdin.
    fn hidden(&mut self, question: &str) -> anyhow::Result<String> {
        if self.terminal {
            let line = super::secret::read_line_hidden(&format!("{question}: "))
                .context("cannot read the key")?;
            eprintln!();
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
        let mut value = String::new();
        self.input
            .by_ref()
            .take(64 * 1024)
            .read_line(&mut value)
            .context("cannot read it from stdin")?;
        Ok(value)
    }
}

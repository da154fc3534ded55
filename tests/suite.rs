//! The integration suite as one test binary: each file beside this one is
//! a module here, named as its file is (`cargo test -p hearth-tests --test
//! suite gate::` runs `gate.rs`). One binary links once; fifty linked the
//! whole daemon fifty times after every change (docs/testing.md). The soak
//! and the crash suite stay binaries of their own (`soak.rs`, `crash.rs`).
//!
//! Tests in different files now share a process: one that changes the
//! process's own state (its environment, its working directory) must say
//! why nothing else can notice.

mod agent;
mod agents;
mod backup;
mod browser_daemon;
mod callbacks;
mod canvas;
mod canvas_auth;
mod canvas_browser;
mod capture;
mod channel_health;
mod cli_daemon;
mod config;
mod confinement;
mod confirmations;
mod contacts;
mod control_browser;
mod daemon;
mod discord;
mod disk_full;
mod doctor;
mod documents;
mod dynamic_tools;
mod fake_signal;
mod fake_telegram;
mod first_hour;
mod fs_plugin;
mod fuzz_rule;
mod gate;
mod groups;
mod groups_browser;
mod guards;
mod hard_gate;
mod heartbeat;
mod hot_reload;
mod housekeeping;
mod images;
mod kernel_floor;
mod knowledge;
mod lua_sandbox;
mod lua_tools;
mod mail;
mod matrix;
mod mcp;
mod model_choice;
mod module_graph;
mod pages;
mod plugins;
mod policy;
mod prompt_cache;
mod recall;
mod scheduler;
mod search;
mod secrets;
mod service;
mod setup;
mod shell_plugin;
mod signal;
mod source_rules;
mod stop;
mod summaries;
mod telegram;
mod thinking;
mod tool_budget;
mod usage;
mod voice;
mod web_plugin;
mod web_search;
mod workers;
mod workshop;

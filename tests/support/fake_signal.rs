//! A fake signal-cli HTTP daemon (being built).

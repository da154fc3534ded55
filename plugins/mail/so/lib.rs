//! The mail channel as a plugin library of its own, loaded with `dlopen`
//! through the C ABI like any third-party plugin. `hearth` links the same
//! code in as a built-in plugin; this library serves a host that loads it
//! from a file (and the integration tests, which load exactly the plugins
//! they name).

hearth_sdk::export_plugin!(hearth_mail::Mail);

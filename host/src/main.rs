//! The `hearth` binary: a thin shell over the `hearth` library's CLI.

fn main() -> std::process::ExitCode {
    hearth::cli::main()
}

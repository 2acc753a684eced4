//! The `yee` command: everything is in the library's [`yee::cli`], which the Python wheel's
//! `yee` command calls too.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(yee::cli::main(std::env::args_os()).0)
}

//! `zkr completions SHELL` and `zkr man`: generated from the clap definitions, so they never
//! drift from the real options.

use std::io::Write as _;

use crate::exit::Code;

#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Writes the completion script for `args.shell` to stdout.
pub(crate) fn completions(args: &CompletionsArgs, mut command: clap::Command) -> anyhow::Result<Code> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, "zkr", &mut out);
    out.flush()?;
    Ok(Code::Success)
}

/// Writes the man page (roff) to stdout.
pub(crate) fn man(command: clap::Command) -> anyhow::Result<Code> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(command).render(&mut out)?;
    out.flush()?;
    Ok(Code::Success)
}

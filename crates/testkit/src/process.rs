//! A child process's output read line by line on a thread of its own, so that a test waits for the
//! next line with a deadline instead of hanging on a silent JVM; and [`Program`], the handshake
//! the test programs share: started with their stdout piped, they print `ready` (or `ready PID`,
//! `warm PID`) once set up, wait for the test (a file it writes, a second tool attached), and print
//! their last line (`done`) before they exit.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The longest a test program may stay silent before the test gives up: long enough for a JVM
/// under instrumentation on a loaded 2-CPU machine, short enough that a hung one fails the test.
pub const PATIENCE: Duration = Duration::from_secs(300);

/// A child's output read line by line on a thread of its own.
pub struct Lines(Receiver<String>);

impl Lines {
    /// Starts reading `out` (say a child's piped stdout) until it ends or `Lines` is dropped.
    pub fn spawn(out: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut out = BufReader::new(out);
            loop {
                // Kept whole, line end included, for `rest_within`.
                let mut line = String::new();
                match out.read_line(&mut line) {
                    Ok(n) if n > 0 && tx.send(line).is_ok() => {}
                    _ => break,
                }
            }
        });
        Lines(rx)
    }

    /// The next line, without its line end; panics when none comes within `timeout` or the output
    /// ended (the JVM exited).
    pub fn next_within(&self, timeout: Duration) -> String {
        match self.0.recv_timeout(timeout) {
            Ok(l) => {
                let l = l.strip_suffix('\n').unwrap_or(&l);
                l.strip_suffix('\r').unwrap_or(l).to_owned()
            }
            Err(RecvTimeoutError::Timeout) => panic!("JVM printed nothing for {timeout:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("JVM exited"),
        }
    }

    /// Everything the output still holds until it ends, line ends included; panics when it has not
    /// ended within `timeout`.
    pub fn rest_within(&self, timeout: Duration) -> String {
        let until = Instant::now() + timeout;
        let mut rest = String::new();
        loop {
            match self
                .0
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                Ok(l) => rest.push_str(&l),
                Err(RecvTimeoutError::Disconnected) => return rest,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("output did not end within {timeout:?}; so far: {rest:?}")
                }
            }
        }
    }
}

/// A program started with its stdout piped and read by [`Lines`]. Killed when dropped while it
/// still runs, so that a failed assertion leaves no process behind.
pub struct Program {
    child: Child,
    out: Lines,
}

impl Program {
    /// Spawns `command` with its stdout piped (its stdin and stderr as `command` sets them).
    pub fn spawn(command: &mut Command) -> Program {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", command.get_program()));
        let out = Lines::spawn(child.stdout.take().unwrap());
        Program { child, out }
    }

    /// [`Program::spawn`], once the program printed `first` as its first line (`ready`).
    pub fn started(command: &mut Command, first: &str) -> Program {
        let program = Program::spawn(command);
        program.expect(first);
        program
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line of the program's output (see [`Lines::next_within`]), within [`PATIENCE`].
    pub fn line(&self) -> String {
        self.out.next_within(PATIENCE)
    }

    /// The next line, within `timeout`.
    pub fn line_within(&self, timeout: Duration) -> String {
        self.out.next_within(timeout)
    }

    /// Asserts that the next line is `line`.
    pub fn expect(&self, line: &str) {
        assert_eq!(self.line(), line, "the program's output");
    }

    /// The rest of the program's output, line ends included, once it closed its stdout (exited);
    /// within [`PATIENCE`].
    pub fn rest(&self) -> String {
        self.out.rest_within(PATIENCE)
    }

    /// Waits for the program to exit.
    pub fn wait(&mut self) -> ExitStatus {
        self.child.wait().unwrap()
    }

    /// Waits for the program to exit, and asserts it exited well.
    pub fn succeeds(&mut self) {
        let status = self.wait();
        assert!(status.success(), "the program ended with {status}");
    }

    /// The process itself, for what the rest does not cover (its stderr, a signal).
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_and_rest() {
        let mut sh = Command::new("sh");
        sh.args(["-c", "echo ready; read x; printf 'a\\r\\nb\\nend'"]);
        let mut p = Program::started(sh.stdin(Stdio::piped()), "ready");
        {
            use std::io::Write;
            writeln!(p.child().stdin.as_mut().unwrap(), "go").unwrap();
        }
        assert_eq!(p.line(), "a");
        assert_eq!(p.rest(), "b\nend");
        p.succeeds();
    }
}

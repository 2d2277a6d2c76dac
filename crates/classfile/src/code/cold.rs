//! Cold instructions: code that runs only on the way to throwing an exception or right after
//! catching one. Lazy revelation leaves the calls made there for the call to reveal when (if
//! ever) it runs, instead of instrumenting their targets up front: most such targets (exception
//! constructors, message formatting, logging) never run in a profile.
//!
//! The classification is a heuristic for precision only; correctness never depends on it, as a
//! cold call is still revealed before it proceeds.

use super::insn::Insn;
use super::opcodes::{self, ATHROW, JSR, JSR_W};

/// Whether control may leave the straight line at `op` (a branch, switch, return, throw or
/// subroutine call).
fn transfers_control(op: u8) -> bool {
    opcodes::ends_flow(op) || opcodes::is_conditional(op) || matches!(op, JSR | JSR_W)
}

/// For each instruction of `insns` (one method body in offset order), whether it is cold:
/// - a *throw tail*: the first control transfer at or after it is `athrow`, so that whenever it
///   runs, an exception is thrown right after (`throw new E("..." + x)`);
/// - a *handler head*: it lies on the straight line from the start of an exception handler
///   (offsets `handlers`) up to and including the first control transfer.
pub fn cold_instructions(insns: &[Insn], handlers: impl IntoIterator<Item = u32>) -> Vec<bool> {
    let mut cold = vec![false; insns.len()];
    // Backwards: `throws` is whether the next control transfer after `i` is `athrow`.
    let mut throws = false;
    for (i, insn) in insns.iter().enumerate().rev() {
        if transfers_control(insn.op) {
            throws = insn.op == ATHROW;
        }
        cold[i] = throws;
    }
    for handler in handlers {
        let Ok(start) = insns.binary_search_by_key(&handler, |insn| insn.offset) else {
            continue;
        };
        for (i, insn) in insns.iter().enumerate().skip(start) {
            cold[i] = true;
            if transfers_control(insn.op) {
                break;
            }
        }
    }
    cold
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::insn::decode_all;
    use crate::code::opcodes::*;

    fn cold(code: &[u8], handlers: &[u32]) -> Vec<bool> {
        let insns = decode_all(code, 0).expect("valid code");
        cold_instructions(&insns, handlers.iter().copied())
    }

    #[test]
    fn a_throw_tail_is_cold_up_to_the_previous_transfer() {
        // 0 iload_0; 1 ifeq +10; 4 new #1; 7 dup; 8 invokespecial #2; 11 athrow; 12 return
        let code = [
            ILOAD_0,
            IFEQ,
            0,
            11,
            NEW,
            0,
            1,
            DUP,
            INVOKESPECIAL,
            0,
            2,
            ATHROW,
            RETURN,
        ];
        assert_eq!(
            cold(&code, &[]),
            [false, false, true, true, true, true, false]
        );
    }

    #[test]
    fn a_handler_head_is_cold_up_to_its_first_transfer() {
        // 0 invokestatic #1; 3 return; 4 astore_1; 5 invokestatic #2; 8 goto -8 (to 0); 11 return
        let code = [
            INVOKESTATIC,
            0,
            1,
            RETURN,
            ASTORE_0 + 1,
            INVOKESTATIC,
            0,
            2,
            GOTO,
            0xff,
            0xf8,
            RETURN,
        ];
        assert_eq!(cold(&code, &[4]), [false, false, true, true, true, false]);
        // A handler offset that is not an instruction's is ignored.
        assert_eq!(cold(&code, &[5 + 1]), [false; 6]);
    }

    #[test]
    fn code_that_returns_is_hot() {
        let code = [INVOKESTATIC, 0, 1, ATHROW, INVOKESTATIC, 0, 2, RETURN];
        assert_eq!(cold(&code, &[]), [true, true, false, false]);
    }
}

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

/// For each instruction of `insns` (one method body in offset order), whether it is *deferred*:
/// not certainly run by an invocation of the method that returns normally, so that lazy
/// revelation leaves the calls made there for the call itself to reveal the first time it runs,
/// instead of at the method's first invocation (callees on branches a run never takes are then
/// never instrumented).
///
/// Certain are the method's entry straight line (from offset 0 up to and including the first
/// control transfer) and every basic block that post-dominates the entry block: each path from
/// the entry to a `return` runs it (exception edges are ignored, so a block after a `try` is
/// certain; a throw tail or a handler is not, since no normal path reaches it or it reaches no
/// `return`). A method that always throws runs its entry line, so that stays certain too. Code
/// with `jsr`/`ret`, or with branches into the middle of an instruction, is left to the entry
/// line alone.
pub fn deferred_instructions(insns: &[Insn]) -> Vec<bool> {
    let entry = insns
        .iter()
        .position(|insn| transfers_control(insn.op))
        .map_or(insns.len(), |i| i + 1);
    let mut deferred = vec![true; insns.len()];
    deferred[..entry].iter_mut().for_each(|d| *d = false);
    if let Some(certain) = certain_blocks(insns) {
        for (d, c) in deferred.iter_mut().zip(certain) {
            *d &= !c;
        }
    }
    deferred
}

/// For each instruction, whether its basic block post-dominates the entry block over normal
/// control flow (see [`deferred_instructions`]); `None` when the code is beyond this analysis.
fn certain_blocks(insns: &[Insn]) -> Option<Vec<bool>> {
    let n = insns.len();
    if n == 0 {
        return None;
    }
    let index_of = |offset: u32| insns.binary_search_by_key(&offset, |i| i.offset).ok();
    // Basic blocks: leaders are the entry, branch targets and instructions after a transfer.
    let mut leader = vec![false; n];
    leader[0] = true;
    for (i, insn) in insns.iter().enumerate() {
        if matches!(insn.op, JSR | JSR_W | opcodes::RET) {
            return None;
        }
        for t in insn.targets() {
            leader[index_of(t)?] = true;
        }
        if transfers_control(insn.op) && i + 1 < n {
            leader[i + 1] = true;
        }
    }
    let mut block_of = Vec::with_capacity(n);
    let mut starts = Vec::new();
    for (i, &l) in leader.iter().enumerate() {
        if l {
            starts.push(i);
        }
        block_of.push(starts.len() - 1);
    }
    let blocks = starts.len();
    // Normal successors of each block; a returning block's is the virtual exit, `blocks`.
    let exit = blocks;
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); blocks + 1];
    for (b, out) in succs.iter_mut().take(blocks).enumerate() {
        let last_index = starts.get(b + 1).map_or(n, |&next| next) - 1;
        let last = &insns[last_index];
        if opcodes::is_return(last.op) {
            out.push(exit);
            continue;
        }
        for t in last.targets() {
            out.push(block_of[index_of(t)?]);
        }
        let falls = !opcodes::ends_flow(last.op);
        if falls && last_index + 1 < n {
            out.push(block_of[last_index + 1]);
        }
    }
    // Post-dominators: dominators of the reverse graph rooted at the exit (Cooper, Harvey and
    // Kennedy, "A Simple, Fast Dominance Algorithm"). Reverse-graph predecessors of a block are
    // its forward successors.
    let mut preds_rev: Vec<Vec<usize>> = vec![Vec::new(); blocks + 1];
    for (b, ss) in succs.iter().enumerate() {
        for &s in ss {
            preds_rev[s].push(b);
        }
    }
    // Postorder of the reverse graph from the exit (iterative DFS over forward predecessors).
    let mut order = vec![usize::MAX; blocks + 1];
    let mut postorder = Vec::with_capacity(blocks + 1);
    let mut visited = vec![false; blocks + 1];
    let mut stack = vec![(exit, 0usize)];
    visited[exit] = true;
    while let Some(&mut (node, ref mut next)) = stack.last_mut() {
        if let Some(&p) = preds_rev[node].get(*next) {
            *next += 1;
            if !visited[p] {
                visited[p] = true;
                stack.push((p, 0));
            }
        } else {
            order[node] = postorder.len();
            postorder.push(node);
            stack.pop();
        }
    }
    if !visited[0] {
        // The entry reaches no `return`: only the entry line is certain.
        return None;
    }
    let mut ipdom = vec![usize::MAX; blocks + 1];
    ipdom[exit] = exit;
    let intersect = |ipdom: &[usize], mut a: usize, mut b: usize| {
        while a != b {
            while order[a] < order[b] {
                a = ipdom[a];
            }
            while order[b] < order[a] {
                b = ipdom[b];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &b in postorder.iter().rev().skip(1) {
            let mut new = usize::MAX;
            for &s in &succs[b] {
                if ipdom[s] == usize::MAX {
                    continue;
                }
                new = if new == usize::MAX {
                    s
                } else {
                    intersect(&ipdom, s, new)
                };
            }
            if new != usize::MAX && ipdom[b] != new {
                ipdom[b] = new;
                changed = true;
            }
        }
    }
    let mut certain_block = vec![false; blocks];
    let mut b = 0;
    while b != exit && b != usize::MAX && !certain_block[b] {
        certain_block[b] = true;
        b = ipdom[b];
    }
    Some(block_of.iter().map(|&b| certain_block[b]).collect())
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
    fn calls_on_either_branch_are_deferred() {
        // 0 invokestatic #1; 3 iload_0; 4 ifeq +7 (to 11); 7 invokestatic #2; 10 return;
        // 11 invokestatic #3; 14 return
        let code = [
            INVOKESTATIC,
            0,
            1,
            ILOAD_0,
            IFEQ,
            0,
            7,
            INVOKESTATIC,
            0,
            2,
            RETURN,
            INVOKESTATIC,
            0,
            3,
            RETURN,
        ];
        let insns = decode_all(&code, 0).expect("valid code");
        assert_eq!(
            deferred_instructions(&insns),
            [false, false, false, true, true, true, true]
        );
        // A method that always throws runs its throw tail at every invocation.
        let insns = decode_all(&[NEW, 0, 1, DUP, INVOKESPECIAL, 0, 2, ATHROW], 0).unwrap();
        assert_eq!(deferred_instructions(&insns), [false; 4]);
        // Straight-line code has nothing deferred.
        let insns = decode_all(&[INVOKESTATIC, 0, 1, RETURN], 0).unwrap();
        assert_eq!(deferred_instructions(&insns), [false; 2]);
    }

    #[test]
    fn blocks_every_path_to_a_return_runs_are_certain() {
        const IFNE: u8 = 0x9a;
        // 0 iload_0; 1 ifeq +6 (to 7); 4 invokestatic #1 (a: one branch); 7 invokestatic #2
        // (b: after the join); 10 iload_0; 11 ifne +7 (to 18); 14 new #3; 17 athrow (a throw
        // tail); 18 invokestatic #4 (c: after the throw); 21 return
        let code = [
            ILOAD_0,
            IFEQ,
            0,
            6,
            INVOKESTATIC,
            0,
            1,
            INVOKESTATIC,
            0,
            2,
            ILOAD_0,
            IFNE,
            0,
            7,
            NEW,
            0,
            3,
            ATHROW,
            INVOKESTATIC,
            0,
            4,
            RETURN,
        ];
        let insns = decode_all(&code, 0).expect("valid code");
        assert_eq!(
            deferred_instructions(&insns),
            [false, false, true, false, false, false, true, true, false, false]
        );
        // A loop body is deferred; what follows the loop is certain.
        // 0 goto +6 (to 6); 3 invokestatic #1; 6 iload_0; 7 ifne -4 (to 3); 10 invokestatic #2;
        // 13 return
        let code = [
            GOTO,
            0,
            6,
            INVOKESTATIC,
            0,
            1,
            ILOAD_0,
            IFNE,
            0xff,
            0xfc,
            INVOKESTATIC,
            0,
            2,
            RETURN,
        ];
        let insns = decode_all(&code, 0).expect("valid code");
        assert_eq!(
            deferred_instructions(&insns),
            [false, true, false, false, false, false]
        );
        // An endless loop reaches no return: the entry line alone is certain.
        // 0 invokestatic #1; 3 invokestatic #2; 6 goto -3 (to 3)
        let code = [INVOKESTATIC, 0, 1, INVOKESTATIC, 0, 2, GOTO, 0xff, 0xfd];
        let insns = decode_all(&code, 0).expect("valid code");
        assert_eq!(deferred_instructions(&insns), [false, false, false]);
    }

    #[test]
    fn code_that_returns_is_hot() {
        let code = [INVOKESTATIC, 0, 1, ATHROW, INVOKESTATIC, 0, 2, RETURN];
        assert_eq!(cold(&code, &[]), [true, true, false, false]);
    }
}

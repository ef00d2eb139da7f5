//! [`RichKeys`]: which instructions print the same rich location, worked out once each.

use crate::Program;
use crate::locate::{InsnSource, locate};
use std::collections::HashMap;

/// Each instruction's rich location as a number, worked out on its first visit: instructions
/// print the same rich annotation exactly when their numbers are equal (the number stands for
/// what the rich style prints of the location, columns aside, like the kernel).
#[derive(Default)]
pub(super) struct RichKeys {
    /// Per instruction, as far as the log goes.
    slots: Vec<RichSlot>,
    /// The number of each location met ([`location_bytes`]), hashed with foldhash's fast
    /// hasher (seeded per process): a log of a large program meets thousands, one per line.
    numbers: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    /// The bytes of a location being looked up.
    scratch: Vec<u8>,
    /// The bytes of the location looked up last, and its number: most instructions share the
    /// location of the one before, known then without hashing.
    previous: Vec<u8>,
    previous_number: Option<u32>,
}

/// What [`RichKeys`] knows of an instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum RichSlot {
    /// Not located yet.
    #[default]
    Unknown,
    /// The instruction has no location.
    Nowhere,
    /// Its location's number.
    At(u32),
}

impl RichKeys {
    pub(super) fn get(&mut self, program: &Program<'_, '_>, index: u64) -> Option<u32> {
        let i = u32::try_from(index).ok()?;
        if i >= program.layout.len {
            // Past the program: located (or not) every time, as it is rare.
            return locate(program, i).map(|src| self.number(&src));
        }
        // The table grows as far as the log goes: one of the whole program for every log cost
        // a file of many logs of a large program most of its time.
        if self.slots.len() <= i as usize {
            self.slots.resize(i as usize + 1, RichSlot::Unknown);
        }
        if self.slots[i as usize] == RichSlot::Unknown {
            self.slots[i as usize] = match locate(program, i) {
                Some(src) => RichSlot::At(self.number(&src)),
                None => RichSlot::Nowhere,
            };
        }
        match self.slots[i as usize] {
            RichSlot::At(n) => Some(n),
            RichSlot::Unknown | RichSlot::Nowhere => None,
        }
    }

    /// The number of `src`'s location, given on its first meeting.
    fn number(&mut self, src: &InsnSource<'_>) -> u32 {
        self.scratch.clear();
        location_bytes(src, &mut self.scratch);
        if let Some(n) = self.previous_number
            && self.scratch == self.previous
        {
            return n;
        }
        let n = match self.numbers.get(&self.scratch[..]) {
            Some(&n) => n,
            None => {
                let n = u32::try_from(self.numbers.len()).unwrap_or(u32::MAX);
                self.numbers.insert(self.scratch.as_slice().into(), n);
                n
            }
        };
        std::mem::swap(&mut self.scratch, &mut self.previous);
        self.previous_number = Some(n);
        n
    }
}

/// What the rich style prints of a location (columns aside, like the kernel), as bytes: each
/// field preceded by its length, so that different locations never give the same bytes.
pub(super) fn location_bytes(src: &InsnSource<'_>, out: &mut Vec<u8>) {
    let mut field = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    field(src.file);
    field(&src.line.to_le_bytes());
    field(src.function.as_bytes());
    for step in &src.inlined {
        field(step.caller.as_bytes());
        match step.call_site {
            Some((file, line, col)) => {
                field(b"@");
                field(file);
                field(&line.to_le_bytes());
                field(&col.to_le_bytes());
            }
            None => field(b""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two instructions get the same rich number exactly when the rich style prints the same
    /// location for them (file, line, function and inline chain; columns aside): over every
    /// instruction of objects with inlined calls, nested subprograms and no DWARF.
    #[test]
    fn rich_numbers_are_equal_exactly_for_equal_locations() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/obj");
        let mut pairs = 0u64;
        for name in [
            "reject_nested.o",
            "xdp_subprogs.o",
            "two_in_one.o",
            "reject_entry.nodwarf.o",
        ] {
            let data = std::fs::read(fixtures.join(name)).unwrap();
            let object = bpflog_object::BpfObject::parse(&data).unwrap();
            for id in object.programs() {
                let program = Program::new(&object, id).unwrap();
                let mut keys = RichKeys::default();
                let located: Vec<(Option<u32>, Option<String>)> = (0..program.layout.len)
                    .map(|i| {
                        let shown = locate(&program, i).map(|src| {
                            let chain: Vec<String> = (src.inlined.iter())
                                .map(|s| format!("{}{:?}", s.caller, s.call_site))
                                .collect();
                            format!("{:?}:{}:{}:{chain:?}", src.file, src.line, src.function)
                        });
                        (keys.get(&program, u64::from(i)), shown)
                    })
                    .collect();
                for (a, shown_a) in &located {
                    for (b, shown_b) in &located {
                        assert_eq!(
                            a == b,
                            shown_a == shown_b,
                            "{name}: {shown_a:?} {shown_b:?}"
                        );
                        pairs += 1;
                    }
                }
                assert!(located.iter().any(|(k, _)| k.is_some()), "{name}");
            }
        }
        assert!(pairs > 10_000, "{pairs} pairs");
    }
}

//! One program loaded through libbpf, on its own, and what the kernel said about it.
//!
//! As veristat's `process_prog` (veristat.c) does, the object is opened afresh for each program,
//! every other program gets `autoload = false` (and no slot of a `struct_ops` map), and the
//! program gets the log level asked for.
//! The program is never attached: the loaded object is dropped, and the program unloaded, at
//! once. As veristat does, maps sized at run time (0 entries in the object) get one entry.
//!
//! A load leaves the system as it found it ([`open`]): every map is the load's own. libbpf
//! would reuse a map the object pins by name (`LIBBPF_PIN_BY_NAME`) that is pinned already,
//! or pin a new one, and then write the initial values of a prog array or map of maps into it;
//! the pin paths are cleared before the load, so maps are created afresh, pinned nowhere, and
//! closed with the object. libbpf's load attaches nothing and registers no `struct_ops` map
//! (`bpf_map__attach_struct_ops` would); externs (`.kconfig`, `.ksyms`) are read, not written.
//!
//! Every program is verified once. A text log (levels 1 and 2) can be as long as the kernel
//! allows (about 1 GiB): each such program is loaded on its own, into a log buffer of the
//! kernel's limit handed to libbpf ([`LogBuffer`]), which libbpf then never grows by loading the
//! program again. At the statistics level alone (`--summary`: log level 4, a few lines) the
//! object's programs are loaded together and libbpf's own 16 MiB buffer (`bpf_object_load_prog`
//! in tools/lib/bpf/libbpf.c) holds each log: libbpf hands it to its print callback between
//! `-- BEGIN PROG LOAD LOG --` and `-- END PROG LOAD LOG --`. The callback keeps what libbpf
//! printed in a buffer of the thread that loads, so that programs can be loaded on several
//! threads at once.

use super::log_buffer::{self, LogBuffer};
use super::progress;
use indicatif::ProgressBar;
use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};
use libbpf_rs::{
    AsRawLibbpf, MapType, ObjectBuilder, OpenMapMut, OpenObject, PrintLevel, ProgramAttachType,
    ProgramType,
};
use std::cell::RefCell;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Once;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;
const EPERM: i32 = 1;
const EINVAL: i32 = 22;
/// The log levels that print text (`BPF_LOG_LEVEL1 | BPF_LOG_LEVEL2`), beside the statistics (4).
const TEXT_LEVELS: u32 = 1 | 2;
const BEGIN: &str = "-- BEGIN PROG LOAD LOG --\n";
const END: &str = "-- END PROG LOAD LOG --\n";

thread_local! {
    /// What libbpf printed on this thread since the last load began.
    static PRINTED: RefCell<Vec<(PrintLevel, String)>> = const { RefCell::new(Vec::new()) };
    /// The length of the machine code of each program accepted on this thread since the last
    /// load began, by name.
    static JITED: RefCell<Vec<(String, u64)>> = const { RefCell::new(Vec::new()) };
    /// This thread's progress line, and the load under way.
    static UNDER_WAY: RefCell<Option<UnderWay>> = const { RefCell::new(None) };
}

/// What a thread's progress line shows of the load under way.
struct UnderWay {
    line: ProgressBar,
    /// The object's file name.
    file: String,
    /// The programs libbpf loads, in its order.
    order: Vec<String>,
}

/// Shows on `line` which program this thread verifies.
pub(crate) fn show_progress_on(line: ProgressBar) {
    UNDER_WAY.with(|u| {
        *u.borrow_mut() = Some(UnderWay {
            line,
            file: String::new(),
            order: Vec::new(),
        })
    });
}

/// A load of `order` (libbpf's order) from the object `file` begins.
fn load_begins(file: &str, order: Vec<String>) {
    UNDER_WAY.with(|u| {
        if let Some(u) = u.borrow_mut().as_mut() {
            u.file = file.to_owned();
            u.order = order;
            if let Some(first) = u.order.first() {
                progress::verifying(&u.line, &format!("{}/{first}", u.file));
            }
        }
    });
}

/// libbpf is done with program `name`: the next one is being verified.
fn program_done(name: &str) {
    UNDER_WAY.with(|u| {
        if let Some(u) = u.borrow().as_ref()
            && let Some(at) = u.order.iter().position(|n| n == name)
            && let Some(next) = u.order.get(at + 1)
        {
            progress::verifying(&u.line, &format!("{}/{next}", u.file));
        }
    });
}

fn capture(level: PrintLevel, message: String) {
    if let Some((name, log)) = program_log(&message) {
        // The moment libbpf hands over an accepted program's log is the only one at which the
        // program is surely loaded: a program after it that fails unloads them all.
        if level == PrintLevel::Debug {
            let size = jited_size(name, processed(log));
            JITED.with(|jited| jited.borrow_mut().push((name.to_owned(), size)));
        }
        program_done(name);
    } else if level == PrintLevel::Warn
        && let Some((_, rest)) = message.split_once("prog '")
        && let Some((name, rest)) = rest.split_once("': ")
        && rest.starts_with("failed to load")
    {
        program_done(name);
    }
    PRINTED.with(|printed| printed.borrow_mut().push((level, message)));
}

/// The program whose log a libbpf message carries, and the log.
fn program_log(message: &str) -> Option<(&str, &str)> {
    let (_, rest) = message.split_once("prog '")?;
    let (name, rest) = rest.split_once("': ")?;
    Some((name, rest.strip_prefix(BEGIN)?))
}

/// The instructions the kernel says it processed, in its log.
fn processed(log: &str) -> Option<u32> {
    let summary = bpflog::profile::Summary::read(log.as_bytes()).ok()?;
    summary.insns.and_then(|n| u32::try_from(n).ok())
}

fn jited_size(name: &str, insns: Option<u32>) -> u64 {
    let short = name.as_bytes().get(..15).unwrap_or(name.as_bytes());
    let options = ProgInfoQueryOptions::default().include_jited_prog_insns(true);
    let mut sizes = ProgInfoIter::with_query_opts(options)
        .filter(|info| {
            info.name.as_encoded_bytes() == short && insns.is_none_or(|n| info.verified_insns == n)
        })
        .map(|info| info.jited_prog_insns.len() as u64);
    let first = sizes.next().unwrap_or_default();
    if sizes.all(|size| size == first) {
        first
    } else {
        0
    }
}

/// The length of the machine code of the loaded program whose kernel id is `id` (0 when the
/// kernel does not say).
fn jited_size_of(id: u32) -> u64 {
    let options = ProgInfoQueryOptions::default().include_jited_prog_insns(true);
    ProgInfoIter::with_query_opts(options)
        .find(|info| info.id == id)
        .map_or(0, |info| info.jited_prog_insns.len() as u64)
}

/// Routes libbpf's messages to the loading thread's buffer (once per process).
pub(crate) fn capture_libbpf_output() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Debug, capture)));
    });
}

/// What the kernel said about one program, and what libbpf knew of it.
#[derive(Default)]
pub(crate) struct Loaded {
    /// Why libbpf loaded nothing (no verifier log came back), when it did not.
    pub failure: Option<String>,
    /// Whether the kernel accepted it.
    pub accepted: bool,
    /// The log as libbpf received it.
    pub log: Vec<u8>,
    /// Bytes of machine code (0 when rejected, or when the kernel did not say).
    pub jited_size: u64,
    /// libbpf's name of the program type.
    pub prog_type: &'static str,
    /// libbpf's name of the expected attach type (`N/A` when libbpf cannot say).
    pub attach_type: &'static str,
}

/// What libbpf knew of one program of a load.
#[derive(Default)]
struct Known {
    prog_type: Option<ProgramType>,
    attach_type: Option<ProgramAttachType>,
}

/// Loads the programs `names` of the object at `path` (which has a `.BTF` section when `btf`),
/// each at log `level`, then unloads them: what came of each, in the order of `names`. Each
/// program is verified once.
///
/// A text log (levels 1, 2) may be of any length: each program is loaded on its own, with a log
/// buffer of the kernel's size ([`LogBuffer`]). At the statistics level alone the programs are
/// loaded together: libbpf loads an object's programs one after the other and stops at the
/// first it cannot load, so the programs after that one were not verified: they are loaded
/// together again, without the ones done. The object is opened, and its maps created, once per
/// failed program rather than once per program.
pub(crate) fn load(path: &Path, btf: bool, names: &[String], level: u32) -> Vec<Loaded> {
    let mut done: Vec<Option<Loaded>> = names.iter().map(|_| None).collect();
    if level & TEXT_LEVELS != 0 {
        // A text log of any length: each program on its own, into a buffer of the kernel's size.
        for (k, name) in names.iter().enumerate() {
            done[k] = load_round(path, btf, &[name], level, Buffer::KernelMax)
                .pop()
                .flatten();
        }
    } else {
        // Statistics alone: the programs together, as many rounds as libbpf stops in.
        loop {
            let left: Vec<usize> = (0..names.len()).filter(|&k| done[k].is_none()).collect();
            if left.is_empty() {
                break;
            }
            let wanted: Vec<&str> = left.iter().map(|&k| names[k].as_str()).collect();
            let round = load_round(path, btf, &wanted, level, Buffer::Libbpf);
            // A round always says something of a program (see `load_round`); this guards the
            // loop.
            let progress = round.iter().any(Option::is_some);
            for (k, loaded) in left.into_iter().zip(round) {
                done[k] = loaded;
            }
            if !progress {
                break;
            }
        }
    }
    let mut done: Vec<Loaded> = done
        .into_iter()
        .map(|loaded| {
            loaded.unwrap_or_else(|| Loaded {
                failure: Some("libbpf loaded none of the object's programs".into()),
                ..Loaded::default()
            })
        })
        .collect();
    // A program in a load that failed lost its attach type with the object: read it again.
    let lost: Vec<usize> = (0..done.len())
        .filter(|&k| done[k].attach_type == "N/A" && done[k].prog_type != "N/A")
        .collect();
    if !lost.is_empty() {
        let wanted: Vec<&str> = lost.iter().map(|&k| names[k].as_str()).collect();
        for (k, attach_type) in lost.into_iter().zip(attach_types(path, &wanted)) {
            if let Some(attach_type) = attach_type {
                done[k].attach_type = attach_type_name(&attach_type);
            }
        }
    }
    done
}

/// The expected attach types libbpf gives the programs `names` (`None` where it cannot say):
/// libbpf-rs reads them from loaded objects only, so the object is loaded again with no program
/// and no map, which verifies nothing.
fn attach_types(path: &Path, names: &[&str]) -> Vec<Option<ProgramAttachType>> {
    let none = || names.iter().map(|_| None).collect();
    let Ok(mut open) = open(path) else {
        return none();
    };
    for mut map in open.maps_mut() {
        if map.set_autocreate(false).is_err() {
            return none();
        }
    }
    for mut prog in open.progs_mut() {
        prog.set_autoload(false);
    }
    let Ok(loaded) = open.load() else {
        return none();
    };
    names
        .iter()
        .map(|n| {
            loaded
                .progs()
                .find(|p| p.name() == *n)
                .map(|p| p.attach_type())
        })
        .collect()
}

/// Where the kernel writes a program's log.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Buffer {
    /// libbpf's own: 16 MiB, grown by loading the program again. For logs known to be short.
    Libbpf,
    /// One of the kernel's largest size per program ([`LogBuffer`]): one load whatever the log.
    KernelMax,
}

/// One `bpf_object__load` of the programs `names`: what came of each (`None`: libbpf stopped
/// before it). A round that verified nothing and names no failed program says why for all.
fn load_round(
    path: &Path,
    btf: bool,
    names: &[&str],
    level: u32,
    buffer: Buffer,
) -> Vec<Option<Loaded>> {
    PRINTED.with(|p| p.borrow_mut().clear());
    JITED.with(|j| j.borrow_mut().clear());
    let mut known: Vec<Known> = names.iter().map(|_| Known::default()).collect();
    // Declared before the object is opened, so that they outlive its load (see `LogBuffer`).
    let mut buffers: Vec<LogBuffer> = match buffer {
        Buffer::KernelMax => {
            let Ok(buffers) = names
                .iter()
                .map(|_| LogBuffer::new(log_buffer::KERNEL_MAX))
                .collect()
            else {
                // The system maps no buffer of that size (strict overcommit, an address-space
                // limit): libbpf's own, then, which grows as the log needs.
                return load_round(path, btf, names, level, Buffer::Libbpf);
            };
            buffers
        }
        Buffer::Libbpf => Vec::new(),
    };
    let result = open_and_load(path, btf, names, level, &mut known, &mut buffers);
    let mut own_logs: Vec<Vec<u8>> = buffers.into_iter().map(LogBuffer::into_log).collect();
    if let Err(e) = &result
        && errno(e) == Some(EINVAL)
        && !own_logs.is_empty()
        && own_logs.iter().all(Vec::is_empty)
    {
        // A kernel before 5.2 takes logs of 16 MiB at most, and says EINVAL before verifying
        // anything to a larger buffer: libbpf's own, then.
        return load_round(path, btf, names, level, Buffer::Libbpf);
    }
    let printed = PRINTED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let jited = JITED.with(|j| std::mem::take(&mut *j.borrow_mut()));
    let warnings: Vec<&str> = printed
        .iter()
        .filter(|(level, _)| *level == PrintLevel::Warn)
        // Each without the `libbpf: ` libbpf begins it with: they are quoted after `libbpf: `.
        .map(|(_, m)| m.strip_prefix("libbpf: ").unwrap_or(m).trim_end())
        .collect();
    let reason = |name: &str, e: Option<&libbpf_rs::Error>| {
        let mut message = format!("cannot load {name}");
        if let Some(e) = e {
            message.push_str(&format!(": {e:#}"));
            if errno(e) == Some(EPERM) {
                message.push_str(&format!("; {}", needs_cap()));
            }
        }
        if !warnings.is_empty() {
            message.push_str(&format!(" (libbpf: {})", warnings.join("; ")));
        }
        message
    };
    let prog_types: Vec<&'static str> = known
        .iter()
        .map(|k| k.prog_type.map_or("N/A", prog_type_name))
        .collect();
    let mut results: Vec<Option<Loaded>> = Vec::with_capacity(names.len());
    for (k, (name, known)) in names.iter().zip(known).enumerate() {
        let prefix = format!("prog '{name}': ");
        let failed_to_load = warnings.iter().any(|w| w.contains(&prefix));
        let own_log = own_logs.get_mut(k).map(std::mem::take).unwrap_or_default();
        let block = match own_log.is_empty() {
            // libbpf printed nothing of a log in a buffer of ours: it is given the level libbpf
            // would have printed it at. libbpf warns of each program the kernel refused (`prog
            // 'NAME': BPF program load failed`); a load that failed after the kernel accepted
            // the program (a prog array's initial slot naming a program not loaded) is no
            // rejection.
            false => Some((
                match failed_to_load {
                    true => PrintLevel::Warn,
                    false => PrintLevel::Debug,
                },
                own_log,
            )),
            true => printed.iter().find_map(|(level, message)| {
                let at = message.find(&prefix)?;
                let rest = message[at + prefix.len()..].strip_prefix(BEGIN)?;
                Some((
                    *level,
                    rest.strip_suffix(END).unwrap_or(rest).as_bytes().to_vec(),
                ))
            }),
        };
        let failure = match (&result, &block) {
            (_, Some(_)) | (Ok(()), None) => None,
            // libbpf named it in a warning: it is the program that failed.
            (Err(e), None) if failed_to_load => Some(reason(name, Some(e))),
            (Err(_), None) => {
                results.push(None);
                continue;
            }
        };
        let failure = match known.prog_type {
            None => Some(format!("libbpf found no program {name} in the object")),
            Some(_) => failure,
        };
        results.push(Some(Loaded {
            // libbpf prints a failed load's log as a warning, an accepted one as debug output.
            accepted: failure.is_none()
                && block
                    .as_ref()
                    .is_none_or(|(level, _)| *level == PrintLevel::Debug),
            log: block.map_or_else(Vec::new, |(_, log)| log),
            failure,
            jited_size: jited
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0, |(_, size)| *size),
            prog_type: known.prog_type.map_or("N/A", prog_type_name),
            attach_type: known.attach_type.as_ref().map_or("N/A", attach_type_name),
        }));
    }
    if let (Err(e), false) = (&result, results.iter().any(Option::is_some)) {
        // Nothing verified and no program named: the object failed as a whole (its maps, its
        // BTF...). Every program says so.
        let failure = reason(&names.join(", "), Some(e));
        return prog_types
            .into_iter()
            .map(|prog_type| {
                Some(Loaded {
                    failure: Some(failure.clone()),
                    prog_type,
                    attach_type: "N/A",
                    ..Loaded::default()
                })
            })
            .collect();
    }
    results
}

/// Whether libbpf may be handed the object at `path` (its bytes `data`): every string libbpf
/// prints from it must be UTF-8, since libbpf-rs turns each message into a `String` and aborts
/// the process on one that is not (the `vsprintf` crate's `expect`). Those strings are the path,
/// the ELF string tables (section and symbol names), the license and `.BTF`'s strings (type,
/// map and function names); the error quotes the first that is not.
pub(crate) fn printable_by_libbpf(path: &Path, data: &[u8]) -> Result<(), String> {
    use object::{Object, ObjectSection};
    let why = |what: &str, text: &[u8]| {
        format!(
            "{what} '{}' is not UTF-8: libbpf prints it and libbpf-rs cannot take that, so the \
             object is not loaded",
            bpflog::object::excerpt(text)
        )
    };
    if path.to_str().is_none() {
        return Err(why("the path", path.as_os_str().as_encoded_bytes()));
    }
    // bpflog read the object already: a file `object` cannot read is libbpf's to refuse.
    let Ok(file) = object::File::parse(data) else {
        return Ok(());
    };
    let endian = if file.is_little_endian() {
        object::Endianness::Little
    } else {
        object::Endianness::Big
    };
    for section in file.sections() {
        let name = section.name_bytes().unwrap_or_default();
        let strings: &[u8] = match name {
            b".strtab" | b".shstrtab" | b"license" => section.data().unwrap_or_default(),
            b".BTF" => {
                let data = section.data().unwrap_or_default();
                bpflog::object::Btf::parse(data, endian)
                    .ok()
                    .and_then(|btf| usize::try_from(btf.strings_offset()).ok())
                    .and_then(|at| data.get(at..))
                    .unwrap_or_default()
            }
            _ => continue,
        };
        if let Some(bad) = strings
            .split(|&b| b == 0)
            .find(|s| std::str::from_utf8(s).is_err())
        {
            let what = format!("a string of section {}", String::from_utf8_lossy(name));
            return Err(why(&what, bad));
        }
    }
    Ok(())
}

/// Opens the object, leaves only `names` to load, loads them at `level` (into `buffers`, one per
/// name, when given) and drops them; `known` gets what libbpf knew of each.
fn open_and_load(
    path: &Path,
    btf: bool,
    names: &[&str],
    level: u32,
    known: &mut [Known],
    buffers: &mut [LogBuffer],
) -> libbpf_rs::Result<()> {
    let mut open = open(path).map_err(|e| match btf {
        true => e,
        // libbpf says ENOENT ("No such file or directory") of an object without the BTF its
        // maps need: what is missing is the section, which `annotate` names too.
        false => libbpf_rs::Error::from(io::Error::new(
            io::ErrorKind::InvalidData,
            bpflog::object::Error::MissingSection(".BTF").to_string(),
        )),
    })?;
    // The programs not to load, by the address of libbpf's `struct bpf_program`.
    let others: Vec<usize> = open
        .progs()
        .filter(|prog| !names.iter().any(|n| prog.name() == *n))
        .map(|prog| prog.as_libbpf_object().as_ptr() as usize)
        .collect();
    // As veristat's `fixup_obj`: a map whose size the loader sets at run time (0 in the object)
    // gets one entry, or the kernel refuses to create it and nothing is verified; a struct_ops
    // map names only the programs to load ([`unlink_struct_ops`]).
    for mut map in open.maps_mut() {
        if map.map_type() == MapType::StructOps
            && let Some(data) = map.initial_value_mut()
        {
            unlink_struct_ops(data, &others);
        }
        let sized_by_kernel = matches!(
            map.map_type(),
            MapType::SkStorage
                | MapType::TaskStorage
                | MapType::InodeStorage
                | MapType::CgroupStorage
                | MapType::CGrpStorage
                | MapType::StructOps
        );
        if !sized_by_kernel && map.max_entries() == 0 {
            map.set_max_entries(1)?;
        }
    }
    let mut order = Vec::with_capacity(names.len());
    for mut prog in open.progs_mut() {
        let at = names.iter().position(|n| prog.name() == *n);
        prog.set_autoload(at.is_some());
        if let Some(at) = at {
            prog.set_log_level(level);
            if let Some(buffer) = buffers.get_mut(at) {
                buffer.lend(&mut prog)?;
            }
            known[at].prog_type = Some(prog.prog_type());
            order.push(names[at].to_owned());
        }
    }
    if order.is_empty() {
        return Ok(());
    }
    let file = path.file_name().unwrap_or(path.as_os_str());
    load_begins(&file.to_string_lossy(), order);
    // Never attached: dropping the object closes the programs' descriptors, which unloads them.
    let loaded = open.load()?;
    for prog in loaded.progs() {
        if let Some(at) = names.iter().position(|n| prog.name() == *n) {
            known[at].attach_type = Some(prog.attach_type());
            if !buffers.is_empty() {
                // No log was printed to measure the machine code at (`capture`): it is now,
                // by the program's id, while the object holds it loaded.
                let size = libbpf_rs::Program::id_from_fd(prog.as_fd()).map_or(0, jited_size_of);
                JITED.with(|jited| jited.borrow_mut().push((names[at].to_owned(), size)));
            }
        }
    }
    Ok(())
}

/// Clears the slots of a struct_ops map's value (`data`, libbpf's `st_ops->data`) that name a
/// program of `others`, as veristat's `mask_unrelated_struct_ops_progs` does. At open libbpf
/// writes the address of each slot's `struct bpf_program` into it: every pointer-sized run of
/// `data` holding one of `others` is such a slot (an object cannot know those addresses, so no
/// other bytes hold one). libbpf loads every
/// program a struct_ops map names, whatever its autoload (`bpf_object_adjust_struct_ops_autoload`
/// in libbpf.c): the programs would be verified once per load of any of them, and one the
/// kernel rejects would fail the loads of the others. A cleared slot makes libbpf turn off the
/// program it named, and the map is created (never registered) all the same.
fn unlink_struct_ops(data: &mut [u8], others: &[usize]) {
    const SLOT: usize = std::mem::size_of::<usize>();
    let mut at = 0;
    while let Some(slot) = data.get_mut(at..at + SLOT) {
        let named = slot
            .try_into()
            .map(usize::from_ne_bytes)
            .unwrap_or_default();
        if named != 0 && others.contains(&named) {
            slot.fill(0);
            at += SLOT;
        } else {
            at += 1;
        }
    }
}

/// The object at `path`, opened by libbpf, with no map pinned: libbpf gives a map pinned by name
/// the path `/sys/fs/bpf/NAME` at open, and at load would reuse the map pinned there (writing a
/// prog array's initial programs into the system's map) or pin its own. Without a path, every
/// map is created for the load alone. An arena's address is left to the kernel: libbpf maps an
/// arena into this process at the address the object's `map_extra` gives (`MAP_FIXED`), over
/// whatever this process has there.
fn open(path: &Path) -> libbpf_rs::Result<OpenObject> {
    let mut open = ObjectBuilder::default().open_file(path)?;
    for mut map in open.maps_mut() {
        unpin(&map)?;
        if map.map_type() == MapType::Arena {
            map.set_map_extra(0)?;
        }
    }
    Ok(open)
}

/// Clears `map`'s pin path (`bpf_map__set_pin_path(map, NULL)`; libbpf-rs only sets one).
#[allow(unsafe_code)]
fn unpin(map: &OpenMapMut<'_>) -> libbpf_rs::Result<()> {
    let map = map.as_libbpf_object().as_ptr();
    // SAFETY: `map` is a live `bpf_map` of an object open and not yet loaded (libbpf-rs hands
    // out only those); with a null path libbpf frees the map's pin path and sets it to null,
    // reading no memory of the caller's.
    let rc = unsafe { libbpf_sys::bpf_map__set_pin_path(map, std::ptr::null()) };
    match rc {
        0 => Ok(()),
        e => Err(libbpf_rs::Error::from(io::Error::from_raw_os_error(
            e.saturating_neg(),
        ))),
    }
}

/// The errno at the root of a libbpf error.
fn errno(e: &libbpf_rs::Error) -> Option<i32> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            return io.raw_os_error();
        }
        current = err.source();
    }
    None
}

fn needs_cap() -> &'static str {
    "loading BPF programs needs CAP_BPF (with CAP_PERFMON for tracing and CAP_NET_ADMIN for \
     networking programs) or CAP_SYS_ADMIN: run bpflog verify as root"
}

/// Fails early, and says why, when the process can load no BPF program at all.
pub(crate) fn check_capabilities() -> Result<(), String> {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        // Not Linux's procfs: let the kernel say.
        return Ok(());
    };
    let effective = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok());
    match effective {
        Some(caps) if caps & (1 << CAP_BPF) == 0 && caps & (1 << CAP_SYS_ADMIN) == 0 => {
            Err(format!("no CAP_BPF: {}", needs_cap()))
        }
        _ => Ok(()),
    }
}

/// libbpf's name of a program type (`prog_type_name` in libbpf.c), as veristat prints it.
fn prog_type_name(t: ProgramType) -> &'static str {
    use ProgramType as T;
    match t {
        T::Unspec => "unspec",
        T::SocketFilter => "socket_filter",
        T::Kprobe => "kprobe",
        T::SchedCls => "sched_cls",
        T::SchedAct => "sched_act",
        T::Tracepoint => "tracepoint",
        T::Xdp => "xdp",
        T::PerfEvent => "perf_event",
        T::CgroupSkb => "cgroup_skb",
        T::CgroupSock => "cgroup_sock",
        T::LwtIn => "lwt_in",
        T::LwtOut => "lwt_out",
        T::LwtXmit => "lwt_xmit",
        T::SockOps => "sock_ops",
        T::SkSkb => "sk_skb",
        T::CgroupDevice => "cgroup_device",
        T::SkMsg => "sk_msg",
        T::RawTracepoint => "raw_tracepoint",
        T::CgroupSockAddr => "cgroup_sock_addr",
        T::LwtSeg6local => "lwt_seg6local",
        T::LircMode2 => "lirc_mode2",
        T::SkReuseport => "sk_reuseport",
        T::FlowDissector => "flow_dissector",
        T::CgroupSysctl => "cgroup_sysctl",
        T::RawTracepointWritable => "raw_tracepoint_writable",
        T::CgroupSockopt => "cgroup_sockopt",
        T::Tracing => "tracing",
        T::StructOps => "struct_ops",
        T::Ext => "ext",
        T::Lsm => "lsm",
        T::SkLookup => "sk_lookup",
        T::Syscall => "syscall",
        T::Netfilter => "netfilter",
        _ => "N/A",
    }
}

/// libbpf's name of an attach type (`attach_type_name` in libbpf.c), as veristat prints it.
fn attach_type_name(t: &ProgramAttachType) -> &'static str {
    use ProgramAttachType as A;
    match t {
        A::CgroupInetIngress => "cgroup_inet_ingress",
        A::CgroupInetEgress => "cgroup_inet_egress",
        A::CgroupInetSockCreate => "cgroup_inet_sock_create",
        A::CgroupInetSockRelease => "cgroup_inet_sock_release",
        A::CgroupSockOps => "cgroup_sock_ops",
        A::CgroupDevice => "cgroup_device",
        A::CgroupInet4Bind => "cgroup_inet4_bind",
        A::CgroupInet6Bind => "cgroup_inet6_bind",
        A::CgroupInet4Connect => "cgroup_inet4_connect",
        A::CgroupInet6Connect => "cgroup_inet6_connect",
        A::CgroupUnixConnect => "cgroup_unix_connect",
        A::CgroupInet4PostBind => "cgroup_inet4_post_bind",
        A::CgroupInet6PostBind => "cgroup_inet6_post_bind",
        A::CgroupInet4Getpeername => "cgroup_inet4_getpeername",
        A::CgroupInet6Getpeername => "cgroup_inet6_getpeername",
        A::CgroupUnixGetpeername => "cgroup_unix_getpeername",
        A::CgroupInet4Getsockname => "cgroup_inet4_getsockname",
        A::CgroupInet6Getsockname => "cgroup_inet6_getsockname",
        A::CgroupUnixGetsockname => "cgroup_unix_getsockname",
        A::CgroupUdp4Sendmsg => "cgroup_udp4_sendmsg",
        A::CgroupUdp6Sendmsg => "cgroup_udp6_sendmsg",
        A::CgroupUnixSendmsg => "cgroup_unix_sendmsg",
        A::CgroupSysctl => "cgroup_sysctl",
        A::CgroupUdp4Recvmsg => "cgroup_udp4_recvmsg",
        A::CgroupUdp6Recvmsg => "cgroup_udp6_recvmsg",
        A::CgroupUnixRecvmsg => "cgroup_unix_recvmsg",
        A::CgroupGetsockopt => "cgroup_getsockopt",
        A::CgroupSetsockopt => "cgroup_setsockopt",
        A::SkSkbStreamParser => "sk_skb_stream_parser",
        A::SkSkbStreamVerdict => "sk_skb_stream_verdict",
        A::SkSkbVerdict => "sk_skb_verdict",
        A::SkMsgVerdict => "sk_msg_verdict",
        A::LircMode2 => "lirc_mode2",
        A::FlowDissector => "flow_dissector",
        A::TraceRawTp => "trace_raw_tp",
        A::TraceFentry => "trace_fentry",
        A::TraceFexit => "trace_fexit",
        A::ModifyReturn => "modify_return",
        A::LsmMac => "lsm_mac",
        A::LsmCgroup => "lsm_cgroup",
        A::SkLookup => "sk_lookup",
        A::TraceIter => "trace_iter",
        A::XdpDevmap => "xdp_devmap",
        A::XdpCpumap => "xdp_cpumap",
        A::Xdp => "xdp",
        A::SkReuseportSelect => "sk_reuseport_select",
        A::SkReuseportSelectOrMigrate => "sk_reuseport_select_or_migrate",
        A::PerfEvent => "perf_event",
        A::KprobeMulti => "trace_kprobe_multi",
        A::StructOps => "struct_ops",
        A::Netfilter => "netfilter",
        A::TcxIngress => "tcx_ingress",
        A::TcxEgress => "tcx_egress",
        A::TraceUprobeMulti => "trace_uprobe_multi",
        A::NetkitPrimary => "netkit_primary",
        A::NetkitPeer => "netkit_peer",
        A::TraceKprobeSession => "trace_kprobe_session",
        _ => "N/A",
    }
}

#[cfg(test)]
mod tests {
    use super::open;
    use libbpf_rs::{AsRawLibbpf, ObjectBuilder, OpenObject};
    use std::path::Path;

    /// libbpf's `map_extra` of the object's map `name`.
    #[allow(unsafe_code)]
    fn map_extra(open: &OpenObject, name: &str) -> u64 {
        let map = open.maps().find(|m| m.name() == name).unwrap();
        // SAFETY: `map` is a live `bpf_map` of the open object; libbpf reads one field of it.
        unsafe { libbpf_sys::bpf_map__map_extra(map.as_libbpf_object().as_ptr()) }
    }

    /// arena.o's arena asks for the address 0x100000000000 (`map_extra`): opened by `open`, it
    /// asks for none, and the kernel chooses.
    #[test]
    fn an_arenas_address_is_the_kernels_choice() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verify/arena.o");
        let as_built = ObjectBuilder::default().open_file(&path).unwrap();
        assert_eq!(map_extra(&as_built, "arena"), 0x1000_0000_0000);
        assert_eq!(map_extra(&open(&path).unwrap(), "arena"), 0);
    }
}

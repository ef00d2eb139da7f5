//! One program loaded through libbpf, on its own, and what the kernel said about it.
//!
//! As veristat's `process_prog` (veristat.c) does, the object is opened afresh for each program,
//! every other program gets `autoload = false`, and the program gets the log level asked for.
//! The program is never attached: the loaded object is dropped, and the program unloaded, at
//! once.
//!
//! Log sizing is libbpf's (`bpf_object_load_prog` in tools/lib/bpf/libbpf.c): a buffer of 16 MiB,
//! doubled and the program loaded again on `ENOSPC` (up to the kernel's limit of about 1 GiB).
//! libbpf-rs has no way to hand libbpf a buffer of our own (`bpf_program__set_log_buf`) without
//! `unsafe`, so a log longer than 16 MiB still costs reloads. At the statistics level alone
//! (`--summary`: log level 4, a few lines) and for every log that fits, a program is verified once.
//!
//! libbpf hands the log to its print callback between `-- BEGIN PROG LOAD LOG --` and
//! `-- END PROG LOAD LOG --`; the callback keeps what libbpf printed in a buffer of the thread
//! that loads, so that programs can be loaded on several threads at once.

use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};
use libbpf_rs::{ObjectBuilder, PrintLevel, ProgramAttachType, ProgramType};
use std::cell::RefCell;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Once;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;
const EPERM: i32 = 1;
const BEGIN: &str = "-- BEGIN PROG LOAD LOG --\n";
const END: &str = "-- END PROG LOAD LOG --\n";

thread_local! {
    /// What libbpf printed on this thread since the last load began.
    static PRINTED: RefCell<Vec<(PrintLevel, String)>> = const { RefCell::new(Vec::new()) };
}

fn capture(level: PrintLevel, message: String) {
    PRINTED.with(|printed| printed.borrow_mut().push((level, message)));
}

/// Routes libbpf's messages to the loading thread's buffer (once per process).
pub(crate) fn capture_libbpf_output() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Debug, capture)));
    });
}

/// What the kernel said about one program, and what libbpf knew of it.
pub(crate) struct Loaded {
    /// Whether the kernel accepted it.
    pub accepted: bool,
    /// The log as libbpf received it.
    pub log: Vec<u8>,
    /// Bytes of machine code (0 when rejected, or when the kernel did not say).
    pub jited_size: u64,
    /// libbpf's name of the program type.
    pub prog_type: &'static str,
    /// libbpf's name of the expected attach type (`N/A` when the load failed: libbpf-rs reads it
    /// from loaded programs only).
    pub attach_type: &'static str,
}

/// What libbpf's load left to read.
struct Attempt {
    prog_type: Option<ProgramType>,
    attach_type: Option<ProgramAttachType>,
    jited_size: u64,
}

/// Loads program `name` of the object at `path` alone at log `level`, then unloads it; an error
/// says why libbpf loaded nothing (and no log came back).
pub(crate) fn load(path: &Path, name: &str, level: u32) -> Result<Loaded, String> {
    PRINTED.with(|p| p.borrow_mut().clear());
    let mut attempt = Attempt {
        prog_type: None,
        attach_type: None,
        jited_size: 0,
    };
    let result = open_and_load(path, name, level, &mut attempt);
    let printed = PRINTED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let block = printed.iter().find_map(|(level, message)| {
        let prefix = format!("prog '{name}': ");
        let at = message.find(&prefix)?;
        let rest = message[at + prefix.len()..].strip_prefix(BEGIN)?;
        Some((*level, rest.strip_suffix(END).unwrap_or(rest)))
    });
    let loaded = |accepted: bool, log: &str| Loaded {
        accepted,
        log: log.as_bytes().to_vec(),
        jited_size: attempt.jited_size,
        prog_type: attempt.prog_type.map_or("N/A", prog_type_name),
        attach_type: attempt.attach_type.as_ref().map_or("N/A", attach_type_name),
    };
    match (result, block) {
        (Ok(false), _) => Err(format!("libbpf found no program {name} in the object")),
        // Loaded, and dropped (unloaded) already.
        (Ok(true), Some((_, log))) => Ok(loaded(true, log)),
        (Ok(true), None) => Ok(loaded(true, "")),
        // libbpf prints a failed load's log as a warning, an accepted one as debug output.
        (Err(_), Some((level, log))) => Ok(loaded(level == PrintLevel::Debug, log)),
        (Err(e), None) => {
            let said: Vec<&str> = printed
                .iter()
                .filter(|(level, _)| *level == PrintLevel::Warn)
                .map(|(_, m)| m.trim_end())
                .collect();
            let mut message = format!("cannot load {name}: {e:#}");
            if errno(&e) == Some(EPERM) {
                message.push_str(&format!("; {}", needs_cap()));
            }
            if !said.is_empty() {
                message.push_str(&format!(" (libbpf: {})", said.join("; ")));
            }
            Err(message)
        }
    }
}

/// Opens the object, leaves only `name` to load, loads it at `level` and drops it; `attempt`
/// gets what libbpf knew of the program. `Ok(false)`: libbpf found no program `name`.
fn open_and_load(
    path: &Path,
    name: &str,
    level: u32,
    attempt: &mut Attempt,
) -> libbpf_rs::Result<bool> {
    let mut open = ObjectBuilder::default().open_file(path)?;
    for mut prog in open.progs_mut() {
        let target = prog.name() == name;
        prog.set_autoload(target);
        if target {
            prog.set_log_level(level);
            attempt.prog_type = Some(prog.prog_type());
        }
    }
    if attempt.prog_type.is_none() {
        return Ok(false);
    }
    // Never attached: dropping the object closes the program's descriptor, which unloads it.
    let loaded = open.load()?;
    if let Some(prog) = loaded.progs().find(|p| p.name() == name) {
        attempt.attach_type = Some(prog.attach_type());
        attempt.jited_size = jited_size(&prog);
    }
    Ok(true)
}

/// The length of the program's machine code, as `bpf_prog_info` gives it (0 if unknown).
fn jited_size(prog: &libbpf_rs::Program<'_>) -> u64 {
    let Ok(id) = libbpf_rs::Program::id_from_fd(prog.as_fd()) else {
        return 0;
    };
    // libbpf-rs reads `bpf_prog_info` only while walking the loaded programs.
    let options = ProgInfoQueryOptions::default().include_jited_prog_insns(true);
    ProgInfoIter::with_query_opts(options)
        .find(|info| info.id == id)
        .map_or(0, |info| info.jited_prog_insns.len() as u64)
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

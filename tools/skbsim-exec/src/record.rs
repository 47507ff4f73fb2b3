//! The record of an exec run: every operation the supervisor answered on a simulated
//! device, in order, as the project's one trace structure ([`sim::trace::record`]): each
//! open, each ioctl with its argument and answer, each write with its length, its answer
//! and the skbs the stack got, each read with its buffer and the bytes or errno, each
//! O_NONBLOCK change, link change (SIOCSIFFLAGS, SIOCSIFMTU, RTM_NEWLINK / RTM_SETLINK),
//! RTM_DELLINK and last close. [`Recorder`] wraps any [`SimTun`] and records what passes
//! through it; the text trace, the JSON lines and the capture's packet comments all come
//! from the records (docs/exec.md#record).
//!
//! Deterministic: files are named by their number in the simulated namespace (0, 1, ...),
//! events by their place in the run; no pid, time or address of the program appears (a
//! pointer argument such as TUNATTACHFILTER's `filter` is left out). The capture's
//! timestamps are virtual: 1 s plus 1 µs per event.

use sim::skb::gso;
use sim::trace::gro_delivery::Csum;
use sim::trace::record::{Field, Part, Record, Value, HEADER};
use sim::tun::ioctl::{cmd, BpfFd};
use sim::tun::DeviceKind;

use crate::inject::Injected;
use crate::{Errno, FileId, Ifa, IoctlAnswer, IoctlArg, LinkInfo, Readiness, SimTun, SA_DATA_LEN};

/// An skb a write handed to the stack (netif_receive_skb, after GRO for IFF_NAPI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackSkb {
    /// skb->protocol (eth_type_trans's, or the PI's / the version nibble's for a tun).
    pub protocol: u16,
    /// The frame's length as AF_PACKET on the device sees it: skb->len plus the
    /// Ethernet header for a tap (eth_type_trans pulled it), skb->len for a tun.
    pub len: usize,
    /// skb_shinfo(skb)->gso_type, gso_size and gso_segs. A real arm reads them from the
    /// `virtio_net_hdr` its packet socket gets (skbsim_kernel::RxVnet): the gso type as
    /// the virtio type's SKB_GSO bits, None when virtio_net_hdr_from_skb refused the skb
    /// (a type no virtio_net_hdr carries); no gso_segs for a GSO skb (no field holds it).
    pub gso_type: Option<u32>,
    pub gso_size: u16,
    pub gso_segs: Option<u16>,
    /// skb->ip_summed as the same `virtio_net_hdr` shows it (virtio_net_hdr_from_skb,
    /// has_data_valid: NEEDS_CSUM with csum_start counted from the frame's first byte
    /// as the packet socket reads it, and csum_offset; DATA_VALID; or flags 0). None
    /// where the header was refused.
    pub csum: Option<Csum>,
}

/// What a write did beyond the count it returned ([`SimTun::take_write_report`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// What became of the frame (`delivered to the stack`, `dropped by XDP`, ...), as
    /// the pipelines' traces say it; None where the far side is not the device model.
    pub fate: Option<String>,
    /// The skbs the stack got, in order.
    pub skbs: Vec<StackSkb>,
    /// The far side's answers: each one's length and what dev_queue_xmit did with it.
    pub answers: Vec<(usize, String)>,
}

/// How a file's reads and writes frame a packet ([`SimTun::framing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framing {
    /// The device's name.
    pub dev: Vec<u8>,
    pub kind: DeviceKind,
    /// Bytes before the frame: the tun_pi (4, without IFF_NO_PI) and the vnet header
    /// (vnet_hdr_sz, with IFF_VNET_HDR).
    pub header: usize,
}

/// Where a captured frame was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// What a write gave tun_get_user.
    TunGetUser,
    /// What tun_put_user gave a read.
    TunPutUser,
    /// What the far side sent on the device (the scenario's capture, crate::inject).
    TunNetXmit,
}

impl Point {
    pub fn name(self) -> &'static str {
        match self {
            Point::TunGetUser => "tun_get_user",
            Point::TunPutUser => "tun_put_user",
            Point::TunNetXmit => "tun_net_xmit",
        }
    }
}

/// A frame for the capture: the bytes after the PI and vnet header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    pub dev: Vec<u8>,
    pub kind: DeviceKind,
    pub point: Point,
    /// The event it belongs to (its place in the run).
    pub event: u64,
    /// Its virtual capture time in ns: 1 s plus 1 µs per event.
    pub ts_ns: u64,
    pub data: Vec<u8>,
    /// The event's packet comment ([`Record::comment`]).
    pub comment: String,
}

/// Everything a run recorded.
#[derive(Debug, Clone, Default)]
pub struct ExecRecord {
    /// The events, in order (no header: the caller makes it, [`header`]).
    pub records: Vec<Record<'static>>,
    /// The frames written and read, in order.
    pub frames: Vec<Captured>,
}

/// The header of an exec run's trace: the arm, the profile, the far side and the
/// program as given, all describing the run (never compared between arms).
pub fn header(backend: &str, profile: &str, far_side: &str, program: &str) -> Record<'static> {
    let mut h = Record::new(HEADER);
    h.push(Field::label("backend", Value::text(backend.to_string())));
    h.push(Field::label("profile", Value::text(profile.to_string())));
    h.push(Field::label("far-side", Value::text(far_side.to_string())));
    h.push(Field::label("program", Value::text(program.to_string())));
    h
}

/// A [`SimTun`] whose every operation is recorded.
#[derive(Debug)]
pub struct Recorder<T> {
    inner: T,
    rec: ExecRecord,
    /// Last closes not yet recorded: a run of them with nothing between is recorded in
    /// file order (one exit closes every file, and the kernel's deferred fputs show
    /// their POLLHUPs to the supervisor in no fixed order).
    closes: Vec<FileId>,
}

fn errno(e: Errno) -> Value<'static> {
    Value::Word(e.name())
}

fn file(f: FileId) -> Field<'static> {
    Field::both("file", Value::Int(f.index() as u64)).meta_at(1)
}

fn yes_no(b: bool) -> Value<'static> {
    Value::Word(if b { "yes" } else { "no" })
}

fn name_text(name: &[u8]) -> Value<'static> {
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Value::text(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// What __tun_chr_ioctl copied in, without the program's addresses.
fn arg_value(arg: &IoctlArg) -> Option<Value<'static>> {
    Some(match arg {
        IoctlArg::Value(v) => Value::Parts(vec![Part::named("value", Value::hex(*v, 1))]),
        IoctlArg::Int(i) => Value::Parts(vec![Part::named("int", Value::text(i.to_string()))]),
        IoctlArg::Ifreq { name, flags } => Value::Parts(vec![
            Part::named("name", name_text(name)),
            Part::named("flags", Value::hex(u64::from(*flags), 4)),
        ]),
        IoctlArg::Hwaddr { family, data } => Value::Parts(vec![
            Part::named("family", Value::hex(u64::from(*family), 4)),
            Part::named("address", Value::text(sim::trace::hex_string(&data[..6]))),
        ]),
        IoctlArg::TxFilter { flags, addrs } => {
            let macs: Vec<String> = addrs.iter().map(|a| sim::trace::hex_string(a)).collect();
            Value::Parts(vec![
                Part::named("flags", Value::hex(u64::from(*flags), 4)),
                Part::named("addrs", Value::text(macs.join(","))),
            ])
        }
        // `filter` is the program's pointer: left out (not deterministic).
        IoctlArg::Fprog { len, insns, .. } => Value::Parts(vec![
            Part::named("len", Value::Int(u64::from(*len))),
            Part::named("insns read", Value::Int(insns.len() as u64)),
        ]),
        IoctlArg::BpfFd(b) => Value::Word(match b {
            BpfFd::Detach => "fd -1 (detach)",
            BpfFd::NotOpen => "fd not open",
            BpfFd::NotProg => "fd not a BPF program",
            BpfFd::Prog {
                socket_filter: true,
            } => "fd BPF_PROG_TYPE_SOCKET_FILTER",
            BpfFd::Prog {
                socket_filter: false,
            } => "fd BPF program of another type",
        }),
        IoctlArg::Out => return None,
        IoctlArg::Fault => Value::Word("unreadable (EFAULT)"),
    })
}

/// The ioctl's return value (or errno) and what it wrote back.
fn answer_value(
    c: u32,
    a: &Result<IoctlAnswer, Errno>,
) -> (Value<'static>, Option<Value<'static>>) {
    match a {
        Err(e) => (errno(*e), None),
        Ok(IoctlAnswer::Done) => (Value::Int(0), None),
        Ok(IoctlAnswer::Returned(n)) => (Value::text(n.to_string()), None),
        Ok(IoctlAnswer::Int(i)) if c == cmd::TUNGETFEATURES => (
            Value::Int(0),
            Some(Value::Parts(vec![Part::named(
                "int",
                Value::hex(*i as u32 as u64, 4),
            )])),
        ),
        Ok(IoctlAnswer::Int(i)) => (
            Value::Int(0),
            Some(Value::Parts(vec![Part::named(
                "int",
                Value::text(i.to_string()),
            )])),
        ),
        Ok(IoctlAnswer::Ifreq { name, flags }) => (
            Value::Int(0),
            Some(Value::Parts(vec![
                Part::named("name", name_text(name)),
                Part::named("flags", Value::hex(u64::from(*flags), 4)),
            ])),
        ),
        // `filter` is the program's pointer: left out.
        Ok(IoctlAnswer::Fprog { len, .. }) => (
            Value::Int(0),
            Some(Value::Parts(vec![Part::named(
                "len",
                Value::Int(u64::from(*len)),
            )])),
        ),
        // The family only: a tap's address is random in the kernel until the program
        // sets one (eth_hw_addr_random), fixed in the model (hwaddr.rs).
        Ok(IoctlAnswer::HwAddr { family, .. }) => (
            Value::Int(0),
            Some(Value::Parts(vec![Part::named(
                "family",
                Value::hex(u64::from(*family), 4),
            )])),
        ),
        // The supervisor answers this EOPNOTSUPP (src/ioctl.rs: tun_reply).
        Ok(IoctlAnswer::NetnsFd) => (Value::Word("EOPNOTSUPP (not simulated)"), None),
    }
}

/// What a packet socket with PACKET_VNET_HDR on the device sees of a gso type
/// (include/linux/virtio_net.h: virtio_net_hdr_from_skb, via
/// sim::trace::gro_observed::virtio_gso_names): `0`, the virtio type's name, or that it
/// has none.
fn vnet_gso_view(gso_type: Option<u32>) -> String {
    const NONE: &str = "none in a virtio_net_hdr";
    match gso_type {
        Some(0) => "0".to_string(),
        Some(t) => {
            let v = sim::trace::gro_observed::virtio_gso_names(&gso::names(t));
            if v.ends_with("(no virtio_net_hdr gso type)") {
                NONE.to_string()
            } else {
                v
            }
        }
        None => NONE.to_string(),
    }
}

/// "CHECKSUM_PARTIAL start 48 offset 16", or what the vnet flags say; `?` where the
/// header was refused.
fn csum_part(c: Option<Csum>) -> Part<'static> {
    let value = c.map_or(Value::Word("?"), |c| {
        let mut out = String::new();
        sim::trace::gro_delivery::csum_value(&mut out, c, None);
        Value::text(out)
    });
    Part::named("csum", value)
}

fn skb_value(s: &StackSkb) -> Value<'static> {
    let unknown = || Value::Word("?");
    Value::Parts(vec![
        Part::named("protocol", Value::hex(u64::from(s.protocol), 4)),
        Part::named("len", Value::Int(s.len as u64)),
        Part::named(
            "gso_type",
            s.gso_type.map_or_else(
                || Value::text(vnet_gso_view(None)),
                |t| Value::text(gso::names(t)),
            ),
        ),
        Part::named(
            "gso_size",
            match s.gso_type {
                Some(_) => Value::Int(u64::from(s.gso_size)),
                None => unknown(),
            },
        ),
        Part::named(
            "gso_segs",
            s.gso_segs
                .map_or_else(unknown, |n| Value::Int(u64::from(n))),
        ),
        csum_part(s.csum),
    ])
}

/// What both arms see of an skb the stack got: an AF_PACKET socket (ETH_P_ALL, in
/// __netif_receive_skb_core's ptype_all taps, after GRO) with PACKET_VNET_HDR shows its
/// protocol, length and the gso type and size and checksum state a virtio_net_hdr
/// carries, not gso_segs.
fn skb_seen(s: &StackSkb) -> Value<'static> {
    let mut parts = vec![
        Part::named("protocol", Value::hex(u64::from(s.protocol), 4)),
        Part::named("len", Value::Int(s.len as u64)),
        Part::named("gso_type", Value::text(vnet_gso_view(s.gso_type))),
    ];
    if vnet_gso_view(s.gso_type) != vnet_gso_view(None) {
        parts.push(Part::named("gso_size", Value::Int(u64::from(s.gso_size))));
        parts.push(csum_part(s.csum));
    }
    Value::Parts(parts)
}

fn count_or_errno(r: &Result<usize, Errno>) -> Value<'static> {
    match r {
        Ok(n) => Value::Int(*n as u64),
        Err(e) => errno(*e),
    }
}

/// `what -> result` for a title.
fn arrow(what: Value<'static>, result: Value<'static>) -> Value<'static> {
    Value::Parts(vec![
        Part::bare("op", what),
        Part::word("->"),
        Part::bare("result", result),
    ])
}

impl<T: SimTun> Recorder<T> {
    pub fn new(inner: T) -> Recorder<T> {
        Recorder {
            inner,
            rec: ExecRecord::default(),
            closes: Vec::new(),
        }
    }

    /// The device as the run left it, and what was recorded.
    pub fn finish(mut self) -> (T, ExecRecord) {
        self.flush_closes();
        (self.inner, self.rec)
    }

    /// The closes waiting to be recorded, in file order.
    fn flush_closes(&mut self) {
        let mut closes = std::mem::take(&mut self.closes);
        closes.sort();
        for f in closes {
            let result = Value::Parts(vec![Part::named("file", Value::Int(f.index() as u64))]);
            self.push_now("close", result, Vec::new());
        }
    }

    fn push(&mut self, kind: &'static str, result: Value<'static>, fields: Vec<Field<'static>>) {
        self.flush_closes();
        self.push_now(kind, result, fields);
    }

    fn push_now(
        &mut self,
        kind: &'static str,
        result: Value<'static>,
        fields: Vec<Field<'static>>,
    ) {
        let mut r = Record::new(kind);
        r.index = Some(self.rec.records.len() as u64);
        r.result = Some(result);
        r.fields = fields;
        self.rec.records.push(r);
    }

    /// The frame of the last event's data (after `framing.header` bytes), captured.
    fn capture(&mut self, point: Point, framing: Option<Framing>, data: &[u8]) {
        let (Some(fr), Some(last)) = (framing, self.rec.records.last()) else {
            return;
        };
        let Some(frame) = data.get(fr.header..).filter(|f| !f.is_empty()) else {
            return;
        };
        let event = last.index.unwrap_or_default();
        let comment = last.comment();
        self.rec.frames.push(Captured {
            dev: fr.dev,
            kind: fr.kind,
            point,
            event,
            ts_ns: 1_000_000_000 + event * 1_000,
            data: frame.to_vec(),
            comment,
        });
    }

    /// `inject: DEV -> LEN`: a frame the far side sent on the device (crate::inject):
    /// its bytes, which both arms see, and the model's dev_queue_xmit fate.
    fn injected(&mut self, i: Injected) {
        let mut fields = vec![
            Field::both("dev", name_text(&i.dev)),
            Field::both("bytes", Value::Bytes(i.data.clone().into())),
        ];
        if let Some(fate) = i.fate {
            fields.push(Field::model("fate", Value::text(fate)));
        }
        let len = Value::Int(i.data.len() as u64);
        self.push("inject", arrow(name_text(&i.dev), len), fields);
        let framing = Framing {
            dev: i.dev,
            kind: i.kind,
            header: 0,
        };
        self.capture(Point::TunNetXmit, Some(framing), &i.data);
    }

    fn link_change(
        &mut self,
        kind: &'static str,
        dev: &[u8],
        r: &Result<(), Errno>,
        mut fields: Vec<Field<'static>>,
    ) {
        let result = match r {
            Ok(()) => Value::Int(0),
            Err(e) => errno(*e),
        };
        fields.insert(0, Field::both("dev", name_text(dev)));
        self.push(kind, arrow(name_text(dev), result), fields);
    }
}

impl<T: SimTun> SimTun for Recorder<T> {
    fn open(&mut self, nonblock: bool) -> FileId {
        let f = self.inner.open(nonblock);
        let fields = vec![Field::both("nonblock", yes_no(nonblock))];
        self.push(
            "open",
            Value::Parts(vec![Part::named("file", Value::Int(f.index() as u64))]),
            fields,
        );
        f
    }

    fn ioctl(&mut self, f: FileId, c: u32, arg: &IoctlArg) -> Result<IoctlAnswer, Errno> {
        let a = self.inner.ioctl(f, c, arg);
        let name = match cmd::name(c) {
            Some(n) => Value::Word(n),
            None => Value::hex(u64::from(c), 8),
        };
        let (ret, wrote) = answer_value(c, &a);
        let mut fields = vec![file(f), Field::both("cmd", Value::hex(u64::from(c), 8))];
        if let Some(v) = arg_value(arg) {
            fields.push(Field::both("arg", v));
        }
        if let Some(v) = wrote {
            fields.push(Field::both("answer", v));
        }
        self.push("ioctl", arrow(name, ret), fields);
        a
    }

    fn set_nonblock(&mut self, f: FileId, nonblock: bool) {
        self.inner.set_nonblock(f, nonblock);
        self.push("nonblock", yes_no(nonblock), vec![file(f)]);
    }

    fn read(&mut self, f: FileId, buf_len: usize) -> Result<Vec<u8>, Errno> {
        let framing = self.inner.framing(f);
        let r = self.inner.read(f, buf_len);
        let what = Value::Parts(vec![Part::named("buffer", Value::Int(buf_len as u64))]);
        let mut fields = vec![file(f)];
        if let Ok(b) = &r {
            fields.push(Field::both("bytes", Value::Bytes(b.clone().into())));
        }
        let count = r.as_ref().map(Vec::len).map_err(|e| *e);
        self.push("read", arrow(what, count_or_errno(&count)), fields);
        if let Ok(b) = &r {
            self.capture(Point::TunPutUser, framing, b);
        }
        r
    }

    fn write(&mut self, f: FileId, data: &[u8]) -> Result<usize, Errno> {
        let framing = self.inner.framing(f);
        let r = self.inner.write(f, data);
        let report = self.inner.take_write_report();
        let what = Value::Parts(vec![
            Part::bare("len", Value::Int(data.len() as u64)),
            Part::word("bytes"),
        ]);
        let mut fields = vec![file(f)];
        if let Some(fate) = report.fate {
            fields.push(Field::model("fate", Value::text(fate)));
        }
        let one = report.skbs.len() == 1;
        for (i, s) in report.skbs.iter().enumerate() {
            let name = if one {
                "skb".to_string()
            } else {
                format!("skb {i}")
            };
            fields.push(
                Field::both(name, skb_value(s))
                    .compared_as(skb_seen(s))
                    .meta_at(2 + i.min(250) as u8),
            );
        }
        for (i, (len, fate)) in report.answers.iter().enumerate() {
            fields.push(Field::model(
                format!("xmit {i}"),
                Value::text(format!("len {len} {fate}")),
            ));
        }
        self.push("write", arrow(what, count_or_errno(&r)), fields);
        if r.is_ok() {
            self.capture(Point::TunGetUser, framing, data);
        }
        r
    }

    fn poll(&self, f: FileId) -> Readiness {
        self.inner.poll(f)
    }

    fn would_block(&self, f: FileId) -> bool {
        self.inner.would_block(f)
    }

    fn close(&mut self, f: FileId) {
        self.inner.close(f);
        self.closes.push(f);
    }

    fn set_link(&mut self, dev: &[u8], up: Option<bool>, mtu: Option<u32>) -> Result<(), Errno> {
        let r = self.inner.set_link(dev, up, mtu);
        let mut fields = Vec::new();
        if let Some(u) = up {
            fields.push(Field::both("up", yes_no(u)));
        }
        if let Some(m) = mtu {
            fields.push(Field::both("mtu", Value::Int(u64::from(m))));
        }
        self.link_change("link", dev, &r, fields);
        for i in self.inner.take_injected() {
            self.injected(i);
        }
        r
    }

    fn link(&self, dev: &[u8]) -> Option<LinkInfo> {
        self.inner.link(dev)
    }

    // Not recorded, as SIOCGIF* reads are not: with a real backend the kernel answers these
    // without the supervisor (the program's own output shows them).
    fn hw_addr(&self, dev: &[u8]) -> Option<(u16, [u8; SA_DATA_LEN])> {
        self.inner.hw_addr(dev)
    }

    fn set_hw_addr(
        &mut self,
        dev: &[u8],
        family: u16,
        data: &[u8; SA_DATA_LEN],
    ) -> Option<Result<(), Errno>> {
        self.inner.set_hw_addr(dev, family, data)
    }

    fn link_name(&self, ifindex: u32) -> Option<Vec<u8>> {
        self.inner.link_name(ifindex)
    }

    fn link_message(&self, dev: &[u8]) -> Option<crate::LinkMessage> {
        self.inner.link_message(dev)
    }

    fn link_names(&self) -> Vec<Vec<u8>> {
        self.inner.link_names()
    }

    fn delete_link(&mut self, dev: &[u8]) -> Result<(), Errno> {
        let r = self.inner.delete_link(dev);
        self.link_change("dellink", dev, &r, Vec::new());
        r
    }

    fn ipv4(&self, dev: &[u8]) -> Option<Ifa> {
        self.inner.ipv4(dev)
    }

    /// RTM_DELADDR as an `address` event with no address.
    fn del_ipv4(&mut self, dev: &[u8]) -> bool {
        let done = self.inner.del_ipv4(dev);
        if done {
            let fields = vec![Field::both("address", Value::Word("none"))];
            self.link_change("address", dev, &Ok(()), fields);
        }
        done
    }

    /// SIOCSIFADDR / SIOCSIFNETMASK (devinet_ioctl) as an event: the address and prefix.
    fn set_ipv4(&mut self, dev: &[u8], ifa: Ifa) {
        self.inner.set_ipv4(dev, ifa);
        let [a, b, c, d] = ifa.local;
        let fields = vec![Field::both(
            "address",
            Value::text(format!("{a}.{b}.{c}.{d}/{}", ifa.prefix)),
        )];
        self.link_change("address", dev, &Ok(()), fields);
    }

    fn take_write_report(&mut self) -> WriteReport {
        self.inner.take_write_report()
    }

    fn take_injected(&mut self) -> Vec<Injected> {
        self.inner.take_injected()
    }

    fn framing(&self, f: FileId) -> Option<Framing> {
        self.inner.framing(f)
    }
}

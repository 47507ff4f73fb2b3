//! One attempt of the real `tap-gro` arm (see the module docs of [`super`]), in named
//! steps: build the namespace's devices ([`Rig::build`]), bind the observers, choose how
//! the writer runs, write the frames at the input's pace, then collect and match what the
//! sockets saw.

use super::*;

/// Everything the attempt set up in the namespace: the tap (and its `[redirect]` B), the
/// XDP program, the tunnel devices, and the GRO settings as read back. Kept alive for
/// the whole attempt.
struct Rig {
    name: String,
    tap: crate::tap::Tap,
    _redirect: Option<crate::tap::Tap>,
    _loaded: Option<LoadedXdp>,
    _udp_socks: udp_gro::UdpGroSockets,
    vx: VxlanSetup,
    gt: GretapSetup,
    gt6: Ip6gretapSetup,
    vx_devs: Vec<VxlanDev>,
    vx6_devs: Vec<VxlanDev>,
    gt_devs: Vec<(String, u32)>,
    gt6_devs: Vec<(String, u32)>,
    feature: bool,
    udp_gro: sim::trace::gro_observed::UdpGroSetup,
    timeout: u64,
    gro_max_size: usize,
    gro_ipv4_max_size: usize,
    hz: u32,
}

impl Rig {
    /// The tap per the scenario's `[device]` (IFF_NAPI, PI and vnet header as it says),
    /// brought up once its addresses are set, its `[xdp]` program, the GRO features and
    /// timeouts, and the vxlan/gretap devices the frames need.
    fn build(
        ns: &mut Netns,
        scenario: &Scenario,
        frames: &[(u64, u64, Vec<u8>)],
    ) -> Result<Rig, ArmError> {
        let plan = &scenario.gro;
        let name = unique_tap_name();
        let dev = sim::tun::TunConfig {
            up: false,
            ..scenario.device.clone()
        };
        let tap = crate::arm::tap_side::open_device(ns, &name, &dev, scenario.writer.nonblocking)?;
        let redirect = match &scenario.redirect {
            Some(cfg) => Some(crate::arm::tap_side::open_device(
                ns,
                &format!("{name}b"),
                cfg,
                true,
            )?),
            None => None,
        };
        let loaded = attach_scenario_xdp(ns, scenario, &tap, redirect.as_ref())?;
        let vx = vxlan_setup(frames, &plan.vxlan_ports);
        let gt = gretap_setup(frames);
        let gt6 = ip6gretap_setup(frames);
        let vx6 = vxlan6_setup(frames, &plan.vxlan_ports);
        address_tap(ns, &tap, &name, (&vx, &vx6), (&gt, &gt6))?;
        ns.rtnl().set_up(tap.ifindex(), true)?;
        let mut et = Ethtool::new()?;
        if et.get_feature(&name, "rx-gro")? != plan.feature {
            et.set_feature(&name, "rx-gro", plan.feature)?;
        }
        let feature = et.get_feature(&name, "rx-gro")?;
        let (udp_socks, udp_gro) = udp_gro::udp_gro_setup(&mut et, &name, plan)?;
        let vx_devs = create_vxlans(ns, &vx, tap.ifindex())?;
        let vx6_devs = create_vxlan6s(ns, &vx6, tap.ifindex())?;
        let gt_devs = create_gretaps(ns, &gt, tap.ifindex())?;
        let gt6_devs = create_ip6gretaps(ns, &gt6, tap.ifindex())?;
        set_gro_flush_timeout(&name, plan.flush_timeout_ns)?;
        let timeout = gro_flush_timeout(&name)?;
        let (gro_max_size, gro_ipv4_max_size) = set_gro_sizes(ns, tap.ifindex(), plan)?;
        let hz = host_hz()?;
        Ok(Rig {
            name,
            tap,
            _redirect: redirect,
            _loaded: loaded,
            _udp_socks: udp_socks,
            vx,
            gt,
            gt6,
            vx_devs,
            vx6_devs,
            gt_devs,
            gt6_devs,
            feature,
            udp_gro,
            timeout,
            gro_max_size,
            gro_ipv4_max_size,
            hz,
        })
    }

    /// The ports of the vxlan devices, sorted and once each.
    fn vxlan_ports(&self) -> Vec<u16> {
        self.vx_devs
            .iter()
            .chain(&self.vx6_devs)
            .map(|d| d.2)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Notes naming the tunnel devices (when not the obvious ones) and what the frames
    /// make them drop.
    fn device_notes(&self, notes: &mut Vec<String>) {
        let (vx, vx_devs, gt_devs) = (&self.vx, &self.vx_devs, &self.gt_devs);
        if vx_devs.iter().any(|d| vx.addrs.is_empty() || d.3 != 1) {
            let list: Vec<String> = vx_devs
                .iter()
                .map(|(n, _, p, v)| format!("{n} port {p} vni {v}"))
                .collect();
            notes.push(format!("vxlan devices: {}", list.join(", ")));
        }
        if !gt_devs.is_empty() {
            let list: Vec<String> = gt_devs
                .iter()
                .zip(&self.gt.tunnels)
                .map(|((n, _), t)| format!("{n} {}", t.describe()))
                .collect();
            notes.push(format!("gretap devices: {}", list.join(", ")));
        }
        for t in &self.gt.mixed_csum {
            notes.push(format!(
                "gretap {}: the frames mix GRE checksums and none; ip_tunnel_rcv drops the plain ones",
                t.describe()
            ));
        }
        ipv6_tunnel_notes(&self.vx6_devs, &self.gt6_devs, &self.gt6, notes);
    }
}

/// The `[xdp]` program, attached as tap-write's arm does (devmaps point at B).
fn attach_scenario_xdp(
    ns: &mut Netns,
    scenario: &Scenario,
    tap: &crate::tap::Tap,
    redirect: Option<&crate::tap::Tap>,
) -> Result<Option<LoadedXdp>, ArmError> {
    let Some(spec) = &scenario.xdp else {
        return Ok(None);
    };
    let (prog, _) = load_program(spec).map_err(ArmError::Input)?;
    let l = LoadedXdp::load(&prog)?;
    if let Some(b) = redirect {
        l.fill_devmaps(b.ifindex())?;
    }
    attach_xdp(ns.rtnl(), tap.ifindex(), &l, spec.mode)?;
    Ok(Some(l))
}

/// The tunnels' outer destination MAC and addresses on the tap, so that the stack hands
/// their frames to `vxlan_rcv` / `gre_rcv` (IPv6 enabled without autoconf when needed).
fn address_tap(
    ns: &mut Netns,
    tap: &crate::tap::Tap,
    name: &str,
    (vx, vx6): (&VxlanSetup, &Vxlan6Setup),
    (gt, gt6): (&GretapSetup, &Ip6gretapSetup),
) -> Result<(), ArmError> {
    if let Some(mac) = vx.tap_mac.or(gt.tap_mac).or(vx6.tap_mac).or(gt6.tap_mac) {
        ns.rtnl().set_address(tap.ifindex(), mac)?;
    }
    let mut addrs = vx.addrs.clone();
    addrs.extend(gt.addrs.iter().filter(|a| !vx.addrs.contains(a)));
    for a in &addrs {
        add_ipv4(tap.ifindex(), *a, 32)?;
    }
    let mut addrs6: Vec<[u8; 16]> = vx6.addrs.clone();
    addrs6.extend(gt6.addrs.iter().filter(|a| !vx6.addrs.contains(a)));
    if !addrs6.is_empty() {
        enable_ipv6_without_autoconf(name)?;
    }
    for a in &addrs6 {
        add_ipv6(tap.ifindex(), *a)?;
    }
    Ok(())
}

/// The AF_PACKET sockets: on the tap (unless `[gro] tap_observer = "none"`, so that
/// gro_cells sees its skbs uncloned: docs/gro.md#gro-cells), and on every tunnel device.
struct Observers {
    tap_observed: bool,
    cap: Option<VnetCapture>,
    vcaps: Vec<VnetCapture>,
    gcaps: Vec<VnetCapture>,
}

impl Observers {
    fn bind(plan: &sim::gro::plan::GroPlan, rig: &Rig) -> Result<Observers, ArmError> {
        let tap_observed = plan.tap_observer == sim::gro::cells::TapObserver::AfPacket;
        let cap = if tap_observed {
            Some(VnetCapture::bind(rig.tap.ifindex())?)
        } else {
            None
        };
        // IPv4 vxlan devices, then IPv6 ones: the model's TunnelDev order.
        let vcaps = rig
            .vx_devs
            .iter()
            .chain(&rig.vx6_devs)
            .map(|(_, idx, _, _)| VnetCapture::bind(*idx))
            .collect::<Result<Vec<_>, _>>()?;
        // gretap devices, then ip6gretap ones: the model's TunnelDev order.
        let gcaps = rig
            .gt_devs
            .iter()
            .chain(&rig.gt6_devs)
            .map(|(_, idx)| VnetCapture::bind(*idx))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Observers {
            tap_observed,
            cap,
            vcaps,
            gcaps,
        })
    }
}

/// How the writer runs: bursts through threaded NAPI, or one write per poll with the
/// writer `SCHED_FIFO` (and ksoftirqd let run after each write when every poll flushes).
struct Writer {
    napi: Option<NapiThread>,
    rt: Option<RealtimeWriter>,
    softirq: Option<SoftirqWait>,
    backend: String,
}

impl Writer {
    fn enter(
        plan: &sim::gro::plan::GroPlan,
        rig: &Rig,
        notes: &mut Vec<String>,
    ) -> Result<Writer, ArmError> {
        let napi = if plan.burst > 1 {
            Some(NapiThread::start(&rig.name)?)
        } else {
            None
        };
        // Without CAP_SYS_NICE the single-write case still runs (the timing check
        // catches a preempted writer); bursts cannot.
        // One write per poll: the writer pinned where it is, and, when every poll flushes
        // (no gro_flush_timeout), that CPU's ksoftirqd let run after each write it may
        // have been left to (SoftirqWait). With a timeout GRO holds skbs across polls
        // anyway, and the check's cost per write would stretch a long run past a jiffy.
        let (rt, softirq) = match napi {
            Some(_) => (None, None),
            None => {
                let cpu = current_cpu()?;
                let rt = match RealtimeWriter::enter(Some(cpu)) {
                    Ok(g) => Some(g),
                    Err(e) => {
                        notes.push(format!("the writer runs without SCHED_FIFO: {e}"));
                        None
                    }
                };
                (rt, (rig.timeout == 0).then(|| SoftirqWait::on(cpu)))
            }
        };
        let backend = match &napi {
            Some(t) => format!(
                "real (AF_PACKET PACKET_VNET_HDR; bursts: threaded NAPI, {}, writer SCHED_FIFO)",
                t.describe()
            ),
            None => format!(
                "real (AF_PACKET PACKET_VNET_HDR; every write() polls NAPI{})",
                if rt.is_some() {
                    ", writer SCHED_FIFO"
                } else {
                    ""
                }
            ),
        };
        Ok(Writer {
            napi,
            rt,
            softirq,
            backend,
        })
    }
}

/// What the writes produced: the tap's captures so far (each with the input time of the
/// last frame written before it), the write errors, and the write times.
struct Written {
    captured: Vec<Captured>,
    captured_ts: Vec<u64>,
    write_errors: Vec<ObservedWriteError>,
    written: u64,
    last_ts: u64,
    idle_bursts: usize,
    times: Vec<WriteTime>,
    /// The first burst the NAPI kthread polled before its last write, if any.
    split_burst: Option<String>,
}

/// Sleep, then spin, until `due` after `t0`.
fn wait_until(t0: Instant, due: Duration) {
    while t0.elapsed() < due {
        // A second clock read: it may already be past `due`.
        let left = due.saturating_sub(t0.elapsed());
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Write every frame into the tap, each burst's first frame no earlier than its input
/// timestamp says (from a tick, at the input's phase within its jiffy), and collect the
/// tap's captures after each poll.
fn write_frames(
    scenario: &Scenario,
    frames: &[(u64, u64, Vec<u8>)],
    rig: &Rig,
    writer: &mut Writer,
    cap: &mut Option<VnetCapture>,
) -> Result<Written, ArmError> {
    let plan = &scenario.gro;
    let mut nonblocking = scenario.writer.nonblocking;
    let jiffy = Duration::from_nanos(1_000_000_000 / u64::from(rig.hz.max(1)));
    let ts0 = frames.first().map_or(0, |f| f.1);
    let phase = Duration::from_nanos(ts0 % jiffy.as_nanos() as u64);
    align_to_tick(phase, jiffy);
    let t0 = Instant::now();
    let mut w = Written {
        captured: Vec::new(),
        captured_ts: Vec::new(),
        write_errors: Vec::new(),
        written: 0,
        last_ts: ts0,
        idle_bursts: 0,
        times: Vec::with_capacity(frames.len()),
        split_burst: None,
    };
    let mut burst_first = 0u64;
    let mut pending = 0usize;
    let jiffy_ns = jiffy.as_nanos() as u64;
    for (index, ts, data) in frames {
        if pending == 0 {
            wait_until(t0, Duration::from_nanos(ts.saturating_sub(ts0)));
            if let Some(t) = writer.napi.as_mut() {
                t.mark()?;
                burst_first = *index;
            }
        }
        let (wire, nb) = compose_write(scenario, *index, data);
        if nb != nonblocking {
            rig.tap.set_nonblocking(nb)?;
            nonblocking = nb;
        }
        w.last_ts = *ts;
        let (before, jiffy_before) = (Instant::now(), jiffy_now(jiffy_ns));
        let result = rig.tap.write(&wire);
        w.times.push(WriteTime {
            ts: *ts,
            before,
            after: Instant::now(),
            jiffy_before,
            jiffy_after: jiffy_now(jiffy_ns),
        });
        match result {
            Ok(n) if n == wire.len() => w.written += 1,
            Ok(n) => {
                return Err(ArmError::Kernel(KernelError::new(
                    format!("write of frame {index} into {}", rig.name),
                    Cause::Protocol(format!("short write: {n} of {} bytes", wire.len())),
                )))
            }
            Err(e) => {
                w.write_errors.push(ObservedWriteError {
                    frame: *index,
                    ts_ns: *ts,
                    len: data.len(),
                    errno: e.name().to_string(),
                });
                continue;
            }
        }
        pending += 1;
        match writer.napi.as_mut() {
            Some(t) => {
                if pending >= plan.burst || pending > NAPI_POLL_WEIGHT {
                    pending = 0;
                    note_split(t, burst_first, *index, &mut w.split_burst)?;
                    poll_burst(t, scenario, &mut w.idle_bursts)?;
                    collect(cap, &mut w.captured, &mut w.captured_ts, w.last_ts)?;
                }
            }
            None => {
                pending = 0;
                if let Some(s) = writer.softirq.as_mut() {
                    s.let_run()?;
                }
                collect(cap, &mut w.captured, &mut w.captured_ts, w.last_ts)?;
            }
        }
    }
    if let (Some(t), true) = (writer.napi.as_mut(), pending > 0) {
        let last = frames.last().map_or(0, |f| f.0);
        note_split(t, burst_first, last, &mut w.split_burst)?;
        poll_burst(t, scenario, &mut w.idle_bursts)?;
    }
    Ok(w)
}

/// Before a burst's poll: when the NAPI kthread already ran during the burst (frames
/// `first..=last`), the burst was not one poll, so the run is not the scenario's burst.
fn note_split(
    t: &NapiThread,
    first: u64,
    last: u64,
    split: &mut Option<String>,
) -> Result<(), KernelError> {
    if split.is_none() && t.ran_since_mark()? {
        *split = Some(format!(
            "the NAPI kthread ran during the burst of frames {first}-{last} (polled before its last write)"
        ));
    }
    Ok(())
}

/// What the tunnel devices' sockets saw: each device's frames (for matching to the
/// tap's GSO skbs), and with gro_cells the tunnel deliveries themselves.
struct TunnelSeen {
    vx_frames: Vec<(usize, Vec<u8>)>,
    gt_frames: Vec<(usize, Vec<u8>)>,
    tunnel: Vec<(String, ObservedSkb)>,
}

/// Drain the tunnel devices' sockets (those whose counters say they received anything).
fn collect_tunnels(
    ns: &mut Netns,
    plan: &sim::gro::plan::GroPlan,
    rig: &Rig,
    obs: &mut Observers,
    notes: &mut Vec<String>,
) -> Result<TunnelSeen, ArmError> {
    let mut received = |idx: u32| ns.rtnl().stats(idx).map(|st| st.rx_packets > 0);
    let vx_received = rig
        .vx_devs
        .iter()
        .chain(&rig.vx6_devs)
        .map(|(_, idx, _, _)| received(*idx))
        .collect::<Result<Vec<_>, _>>()?;
    let gt_received = rig
        .gt_devs
        .iter()
        .chain(&rig.gt6_devs)
        .map(|(_, idx)| received(*idx))
        .collect::<Result<Vec<_>, _>>()?;
    let vx_captured = drain_tunnels(&mut obs.vcaps, &vx_received)?;
    let gt_captured = drain_tunnels(&mut obs.gcaps, &gt_received)?;
    let untag = |v: &[(usize, Captured)]| -> Vec<(usize, Vec<u8>)> {
        v.iter().map(|(k, (_, b))| (*k, b.clone())).collect()
    };
    let (vx_frames, gt_frames) = (untag(&vx_captured), untag(&gt_captured));
    let tunnel = if plan.cells() {
        tunnel_deliveries(
            (&rig.vx_devs, &rig.vx6_devs),
            &vx_captured,
            (&rig.gt, &rig.gt6),
            &gt_captured,
            notes,
        )
    } else {
        Vec::new()
    };
    Ok(TunnelSeen {
        vx_frames,
        gt_frames,
        tunnel,
    })
}

/// The tap's deliveries, each GSO skb of a VXLAN or GRE-TEB flow with the length of its
/// byte-identical inner frame on a tunnel device; also which tunnel frames were matched.
fn match_deliveries(
    captured: Vec<Captured>,
    seen: &TunnelSeen,
    vxlan_ports: &[u16],
    notes: &mut Vec<String>,
) -> (Vec<ObservedSkb>, Vec<bool>, Vec<bool>) {
    let mut used = vec![false; seen.vx_frames.len()];
    let mut gt_used = vec![false; seen.gt_frames.len()];
    let mut deliveries = Vec::new();
    for (n, (vnet, bytes)) in captured.into_iter().enumerate() {
        let mut skb = ObservedSkb {
            bytes,
            ..ObservedSkb::default()
        };
        match vnet {
            Ok(v) => skb.vnet = Some(v),
            Err(e) => {
                notes.push(format!("delivery {n}: {e}"));
                skb.error = Some(e);
            }
        }
        if skb.vnet.is_some_and(|v| v.gso_type != 0) {
            if let Some(inner) = vxlan_of(&skb.bytes, vxlan_ports)
                .map(|v| v.inner)
                .or_else(|| vxlan6_of(&skb.bytes, vxlan_ports).map(|v| v.inner))
            {
                skb.vxlan_dev_len = take_identical(&seen.vx_frames, &mut used, &skb.bytes[inner..]);
                if skb.vxlan_dev_len.is_none() {
                    notes.push(format!(
                        "delivery {n} (GSO, VXLAN) has no byte-identical inner frame on a vxlan device"
                    ));
                }
            } else if let Some(inner) = gre_teb_of(&skb.bytes)
                .map(|g| g.inner)
                .or_else(|| gre6_teb_of(&skb.bytes).map(|g| g.inner))
            {
                skb.gretap_dev_len =
                    take_identical(&seen.gt_frames, &mut gt_used, &skb.bytes[inner..]);
                if skb.gretap_dev_len.is_none() {
                    notes.push(format!(
                        "delivery {n} (GSO, GRE-TEB) has no byte-identical inner frame on a gretap device"
                    ));
                }
            }
        }
        deliveries.push(skb);
    }
    (deliveries, used, gt_used)
}

/// A note when the segments delivered on the tap do not add up to the frames written.
fn segments_note(
    rig: &Rig,
    deliveries: &[ObservedSkb],
    (written, tap_observed): (u64, bool),
    vxlan_ports: &[u16],
    notes: &mut Vec<String>,
) {
    let segs_seen: usize = deliveries
        .iter()
        .map(|d| match &d.vnet {
            Some(v) if v.gso_type != 0 => {
                sim::trace::gro_observed::derived_segs(&d.bytes, v.gso_size, vxlan_ports)
                    .unwrap_or(1)
            }
            _ => 1,
        })
        .sum();
    if tap_observed && segs_seen as u64 != written {
        notes.push(format!(
            "{written} frames written, {segs_seen} segments delivered on {}",
            rig.name
        ));
    }
}

/// Notes on the tunnel devices' frames matched to the tap's GSO skbs (with the gretap
/// devices' counters).
fn tunnel_match_notes(
    ns: &mut Netns,
    rig: &Rig,
    seen: &TunnelSeen,
    (used, gt_used): (&[bool], &[bool]),
    notes: &mut Vec<String>,
) -> Result<(), ArmError> {
    let vx_seen = seen.vx_frames.len();
    let vx_matched = used.iter().filter(|u| **u).count();
    if vx_seen > 0 {
        notes.push(format!(
            "vxlan devices received {vx_seen} frame(s), {vx_matched} matched to GSO skbs on the tap"
        ));
    }
    let gt_matched = gt_used.iter().filter(|u| **u).count();
    if !rig.gt_devs.is_empty() || !rig.gt6_devs.is_empty() {
        let mut counters = Vec::new();
        for (dname, idx) in rig.gt_devs.iter().chain(&rig.gt6_devs) {
            let st = ns.rtnl().stats(*idx)?;
            counters.push(format!(
                "{dname} rx_packets {} rx_errors {} rx_crc_errors {} rx_dropped {}",
                st.rx_packets, st.rx_errors, st.rx_crc_errors, st.rx_dropped
            ));
        }
        notes.push(format!(
            "gretap devices received {} frame(s), {gt_matched} matched to GSO skbs on the tap ({})",
            seen.gt_frames.len(),
            counters.join("; ")
        ));
    }
    Ok(())
}

/// One attempt; the second value says why its timing did not follow the input's, if it
/// did not.
pub(super) fn replay(
    ns: &mut Netns,
    scenario: &Scenario,
    frames: &[(u64, u64, Vec<u8>)],
) -> Result<(RealTapGro, Option<String>), ArmError> {
    let plan = &scenario.gro;
    let mut notes = Vec::new();
    let rig = Rig::build(ns, scenario, frames)?;
    let mut obs = Observers::bind(plan, &rig)?;
    let mut writer = Writer::enter(plan, &rig, &mut notes)?;
    let vxlan_ports = rig.vxlan_ports();
    rig.device_notes(&mut notes);

    let mut w = write_frames(scenario, frames, &rig, &mut writer, &mut obs.cap)?;
    if w.idle_bursts > 0 {
        notes.push(format!(
            "{} burst(s) queued nothing for NAPI (the XDP program consumed every frame)",
            w.idle_bursts
        ));
    }
    drop(writer.rt.take());
    if let Some(s) = writer.softirq.as_ref().filter(|s| s.waits > 0) {
        notes.push(format!(
            "{} write(s) waited for ksoftirqd before the next (their NET_RX softirq was left to it)",
            s.waits
        ));
    }
    let timing = timing_problem(&w.times, rig.hz, rig.timeout).or(w.split_burst.take());
    // The gro_flush_timeout hrtimer, then whatever is still in flight.
    std::thread::sleep(Duration::from_nanos(rig.timeout) + Duration::from_millis(2));
    let quiet = QUIET + Duration::from_nanos(rig.timeout.saturating_mul(2));
    if let Some(cap) = obs.cap.as_mut() {
        cap.drain_quiet(quiet, &mut w.captured)?;
    }
    w.captured_ts.resize(w.captured.len(), w.last_ts);
    let seen = collect_tunnels(ns, plan, &rig, &mut obs, &mut notes)?;
    if let Some(t) = &writer.napi {
        notes.push(format!(
            "bursts: threaded NAPI, {}; {} polls waited for",
            t.describe(),
            t.polls
        ));
    }
    drop(writer.napi.take());
    let stats = ns.rtnl().stats(rig.tap.ifindex())?;

    let (deliveries, used, gt_used) = match_deliveries(w.captured, &seen, &vxlan_ports, &mut notes);
    segments_note(
        &rig,
        &deliveries,
        (w.written, obs.tap_observed),
        &vxlan_ports,
        &mut notes,
    );
    tunnel_match_notes(ns, &rig, &seen, (&used, &gt_used), &mut notes)?;
    let setup = ObservedSetup {
        backend: writer.backend,
        feature: rig.feature,
        teb_gro: plan.teb_gro,
        vlan_gro: plan.vlan_gro,
        vxlan_ports,
        burst: plan.burst,
        flush_timeout_ns: rig.timeout,
        hz: rig.hz,
        weight: NAPI_POLL_WEIGHT,
        udp_gro: rig.udp_gro,
        gro_max_size: rig.gro_max_size,
        gro_ipv4_max_size: rig.gro_ipv4_max_size,
    };
    let real = RealTapGro {
        observed: ObservedGro {
            setup,
            write_errors: w.write_errors,
            deliveries,
            written: w.written,
            rx_packets: stats.rx_packets,
            rx_bytes: stats.rx_bytes,
            tunnel: seen.tunnel,
        },
        delivered_ts: w.captured_ts,
        frames: frames.len() as u64,
        notes,
    };
    Ok((real, timing))
}

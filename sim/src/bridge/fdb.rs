//! The forwarding database: net/bridge/br_fdb.c as a tap port sees it. Keyed by MAC
//! (vid 0: the bridge has no VLAN filtering), in a `BTreeMap` so nothing depends on hash
//! order. The clock is the replay's (frame timestamps), never the wall clock.

use std::collections::BTreeMap;

use super::{Mac, Port};

/// `BR_DEFAULT_AGEING_TIME` (net/bridge/br_private.h: `300 * HZ`), in nanoseconds.
pub const BR_DEFAULT_AGEING_TIME_NS: u64 = 300 * 1_000_000_000;

/// One `net_bridge_fdb_entry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdbEntry {
    /// `fdb->dst`; `None` for the bridge device's own address.
    pub port: Option<Port>,
    /// `BR_FDB_LOCAL` (with `BR_FDB_STATIC`): a port's or the bridge's own address,
    /// added by `br_fdb_add_local` / `br_fdb_change_mac_address`; never ages.
    pub local: bool,
    /// `fdb->updated`, in replay nanoseconds.
    pub updated_ns: u64,
}

/// The bridge's fdb.
#[derive(Debug, Clone)]
pub struct Fdb {
    entries: BTreeMap<Mac, FdbEntry>,
    /// `br->ageing_time` (`hold_time`: no topology change without STP).
    pub ageing_ns: u64,
    /// No learned entry was updated before this (a lower bound: a refresh only moves
    /// an entry's time later; `u64::MAX` with none learned). [`Fdb::age`] walks the
    /// entries only once the clock has passed this plus the ageing time, as the
    /// kernel's gc work runs only when the next entry is due (br_fdb_cleanup
    /// reschedules itself for the earliest `updated + hold_time`), not on every frame.
    oldest_ns: u64,
}

impl Fdb {
    pub fn new(ageing_ns: u64) -> Fdb {
        Fdb {
            entries: BTreeMap::new(),
            ageing_ns,
            oldest_ns: u64::MAX,
        }
    }

    /// `br_fdb_add_local`: a permanent local entry.
    pub fn add_local(&mut self, mac: Mac, port: Option<Port>) {
        self.entries.entry(mac).or_insert(FdbEntry {
            port,
            local: true,
            updated_ns: 0,
        });
    }

    /// `br_fdb_cleanup` run up to `now_ns`: a learned entry goes once `updated +
    /// ageing_time` has passed. The kernel's gc work is scheduled for exactly that
    /// moment, so a frame arriving at the very nanosecond races it; the model keeps the
    /// entry until the ageing time is strictly exceeded.
    pub fn age(&mut self, now_ns: u64) {
        let ageing = self.ageing_ns;
        // Every learned entry's `updated_ns` is at least `oldest_ns`, so none is older
        // than `now_ns - oldest_ns`: nothing can go yet.
        if now_ns.saturating_sub(self.oldest_ns) <= ageing {
            return;
        }
        self.entries
            .retain(|_, e| e.local || now_ns.saturating_sub(e.updated_ns) <= ageing);
        self.oldest_ns = self
            .learned()
            .map(|(_, e)| e.updated_ns)
            .min()
            .unwrap_or(u64::MAX);
    }

    /// `br_fdb_update`: learn `mac` on `port` at `now_ns`. A local entry is never moved
    /// (the kernel warns "received packet ... with own address as source address");
    /// `hold_time == 0` disables learning ("some users want to always flood").
    pub fn update(&mut self, mac: Mac, port: Port, now_ns: u64) {
        if self.ageing_ns == 0 {
            return;
        }
        match self.entries.get_mut(&mac) {
            Some(e) if e.local => {}
            Some(e) => {
                e.updated_ns = now_ns;
                e.port = Some(port);
            }
            None => {
                self.oldest_ns = self.oldest_ns.min(now_ns);
                self.entries.insert(
                    mac,
                    FdbEntry {
                        port: Some(port),
                        local: false,
                        updated_ns: now_ns,
                    },
                );
            }
        }
    }

    /// `br_fdb_find_rcu`: no expiry check here (only the gc removes entries).
    pub fn find(&self, mac: &Mac) -> Option<&FdbEntry> {
        self.entries.get(mac)
    }

    /// Learned (non-local) entries, in MAC order.
    pub fn learned(&self) -> impl Iterator<Item = (&Mac, &FdbEntry)> {
        self.entries.iter().filter(|(_, e)| !e.local)
    }
}

#[cfg(test)]
#[path = "fdb_tests.rs"]
mod tests;

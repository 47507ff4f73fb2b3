//! Ageing (br_fdb_cleanup): a learned entry goes once the clock is more than the
//! ageing time past its last update, however the entries were learned and refreshed;
//! the walk being skipped until the oldest entry is due must not change which go.

use super::*;

const M1: Mac = [2, 0, 0, 0, 0, 1];
const M2: Mac = [2, 0, 0, 0, 0, 2];
const LOCAL: Mac = [2, 0, 0, 0, 0, 9];

fn learned(f: &Fdb) -> Vec<(Mac, u64)> {
    f.learned().map(|(m, e)| (*m, e.updated_ns)).collect()
}

#[test]
fn an_entry_refreshed_after_the_oldest_ages_from_its_own_update() {
    let mut f = Fdb::new(100);
    f.add_local(LOCAL, Some(Port::Tap));
    f.update(M1, Port::Uplink, 0);
    f.update(M2, Port::Uplink, 50);
    // M1, the oldest, is refreshed: 120 is past 0 + 100 but not past its update at 90.
    f.update(M1, Port::Uplink, 90);
    f.age(120);
    assert_eq!(learned(&f), vec![(M1, 90), (M2, 50)]);
    // M2 is 100 past its update at 150: kept (strictly exceeded only); at 151 it goes.
    f.age(150);
    assert_eq!(learned(&f), vec![(M1, 90), (M2, 50)]);
    f.age(151);
    assert_eq!(learned(&f), vec![(M1, 90)]);
    // M2 learned again later: M1 still goes at 191, M2 stays until 300.
    f.update(M2, Port::Uplink, 200);
    f.age(190);
    assert_eq!(learned(&f), vec![(M1, 90), (M2, 200)]);
    f.age(191);
    assert_eq!(learned(&f), vec![(M2, 200)]);
    f.age(301);
    assert_eq!(learned(&f), vec![]);
    // The local entry never ages.
    assert!(f.find(&LOCAL).is_some_and(|e| e.local));
}

#[test]
fn a_clock_that_goes_back_ages_nothing_early() {
    let mut f = Fdb::new(100);
    f.update(M1, Port::Uplink, 1_000);
    // A frame stamped before the entry's update (a capture out of order).
    f.age(10);
    f.update(M2, Port::Uplink, 10);
    assert_eq!(learned(&f), vec![(M1, 1_000), (M2, 10)]);
    f.age(111);
    assert_eq!(learned(&f), vec![(M1, 1_000)]);
    f.age(1_100);
    assert_eq!(learned(&f), vec![(M1, 1_000)]);
    f.age(1_101);
    assert_eq!(learned(&f), vec![]);
}

#[test]
fn an_ageing_time_changed_later_applies_at_once() {
    let mut f = Fdb::new(1_000);
    f.update(M1, Port::Uplink, 0);
    f.age(500);
    assert_eq!(learned(&f), vec![(M1, 0)]);
    f.ageing_ns = 100;
    f.age(101);
    assert_eq!(learned(&f), vec![]);
}

use super::*;
use std::sync::Arc;

fn policy(screenshots: bool) -> Pages {
    Pages::new(Arc::new(cdp_sanitize::Sanitizer::new()), screenshots)
}

const TEXT: FieldKind = FieldKind::Input(InputType::Text);
const UNKNOWN: FieldKind = FieldKind::Input(InputType::Unknown);
const PASSWORD: FieldKind = FieldKind::Input(InputType::Password);
const CODE: FieldKind = FieldKind::Input(InputType::OneTimeCode);

fn t(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + ms)
}

const FRESH: Commit = Commit::FrameNavigated { bfcache: false };
const BFCACHE: Commit = Commit::FrameNavigated { bfcache: true };

/// A fresh cross-document navigation of `target` to `loader` at `at`, as Chromium reports it.
fn navigate(p: &Pages, target: &str, loader: &str, at: SystemTime) {
    p.navigation_started(target, loader, NavigationKind::parse("differentDocument"));
    p.committed(target, loader, FRESH, at);
}

const WITHHELD: Result<(), Withheld> = Err(Withheld::TypedSinceNavigation);

#[test]
fn sensitive_or_unidentified_typing_withholds_until_navigation() {
    let p = policy(true);
    assert_eq!(p.verdict_at("T1", t(0)), Ok(()));
    p.typed_into("T1", 1, UNKNOWN, t(0));
    assert_eq!(p.verdict_at("T1", t(60_000)), WITHHELD);
    assert_eq!(p.verdict_at("T2", t(0)), Ok(()));
    navigate(&p, "T1", "L1", t(1));
    assert_eq!(p.verdict_at("T1", t(60_000)), Ok(()));
    p.typed_into("T1", 2, PASSWORD, t(70_000));
    assert_eq!(p.verdict_at("T1", t(99_000)), WITHHELD);
    let off = policy(false);
    assert_eq!(off.verdict("T1"), Err(Withheld::ScreenshotsOff));
}

#[test]
fn ordinary_typing_withholds_only_right_after() {
    let p = policy(true);
    p.typed_into("T1", 1, TEXT, t(0));
    assert_eq!(p.verdict_at("T1", t(500)), Err(Withheld::JustTyped));
    assert_eq!(p.quiet_until("T1", t(500)), Some(t(1000)));
    assert_eq!(p.verdict_at("T1", t(1000)), Ok(()));
    assert_eq!(p.quiet_until("T1", t(1000)), None);
    // An unidentified burst later found to be a text field stops withholding.
    p.typed_into("T1", 2, UNKNOWN, t(2000));
    assert_eq!(p.verdict_at("T1", t(9000)), WITHHELD);
    p.burst_kind("T1", 2, TEXT);
    assert_eq!(p.verdict_at("T1", t(9000)), Ok(()));
}

#[test]
fn the_quiet_after_typing_counts_from_the_browsers_answer() {
    let p = policy(true);
    p.typed_into("T1", 1, TEXT, t(0));
    // A busy browser answers the keystroke 300 ms later: the text is on screen from then.
    p.typing_answered("T1", 1, t(300));
    assert_eq!(p.verdict_at("T1", t(1200)), Err(Withheld::JustTyped));
    assert_eq!(p.verdict_at("T1", t(1300)), Ok(()));
    // An answer for a burst of another document (or none) changes nothing.
    p.typing_answered("T1", 7, t(5000));
    assert_eq!(p.verdict_at("T1", t(5500)), Ok(()));
}

#[test]
fn a_burst_taken_for_sensitive_stays_sensitive_whatever_a_later_reading_says() {
    // Six code boxes: the first announces a one-time code, the reading of the burst (taken
    // where focus ended, in a later box) says text.
    let p = policy(true);
    p.typed_into("T1", 1, CODE, t(0));
    p.burst_kind("T1", 1, TEXT);
    assert_eq!(p.verdict_at("T1", t(5000)), WITHHELD);
    p.burst_kind("T1", 1, FieldKind::NotEditable);
    assert_eq!(p.verdict_at("T1", t(5000)), WITHHELD);
    // A burst taken for ordinary and then read back as sensitive becomes sensitive for good.
    navigate(&p, "T1", "L1", t(6000));
    p.typed_into("T1", 2, TEXT, t(7000));
    p.burst_kind("T1", 2, PASSWORD);
    p.burst_kind("T1", 2, TEXT);
    assert_eq!(p.verdict_at("T1", t(9000)), WITHHELD);
}

#[test]
fn a_kind_read_back_after_a_navigation_leaves_the_new_document_alone() {
    let p = policy(true);
    p.typed_into("T1", 1, TEXT, t(0));
    navigate(&p, "T1", "L1", t(100));
    // The page agent's reading arrives after the page moved on: it was a password field.
    p.burst_kind("T1", 1, PASSWORD);
    assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
    // Read back before the navigation, it withholds until then.
    p.typed_into("T1", 2, TEXT, t(6000));
    p.burst_kind("T1", 2, PASSWORD);
    assert_eq!(p.verdict_at("T1", t(9000)), WITHHELD);
}

#[test]
fn navigations_and_typing_reported_out_of_order_keep_each_to_its_document() {
    // Typing stamped before a navigation that was reported first: the old document's.
    let p = policy(true);
    navigate(&p, "T1", "L1", t(100));
    p.typed_into("T1", 1, PASSWORD, t(50));
    assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
    assert_eq!(p.quiet_until("T1", t(60)), None);
    // A second producer reporting the same commit late keeps the typing after it.
    p.typed_into("T1", 2, PASSWORD, t(200));
    p.committed("T1", "L1", FRESH, t(100));
    p.committed("T1", "L1", Commit::NavigateReply, t(90));
    assert_eq!(p.verdict_at("T1", t(5000)), WITHHELD);
    assert_eq!(p.quiet_until("T1", t(300)), Some(t(1200)));
    // The next navigation clears it.
    navigate(&p, "T1", "L2", t(6000));
    assert_eq!(p.verdict_at("T1", t(7000)), Ok(()));
}

#[test]
fn navigations_that_commit_no_new_document_keep_the_page_withheld() {
    let p = policy(true);
    navigate(&p, "T1", "L1", t(0));
    p.typed_into("T1", 1, FieldKind::Input(InputType::Payment), t(100));
    // `#receipt`, pushState, a history step back to a pushState entry: within the document.
    p.navigation_started("T1", "", NavigationKind::parse("sameDocument"));
    p.navigation_started("T1", "", NavigationKind::parse("historySameDocument"));
    // A 204 and a download start a navigation (with a loader) that never commits.
    p.navigation_started("T1", "L204", NavigationKind::parse("differentDocument"));
    p.navigation_started("T1", "Ldl", NavigationKind::parse("differentDocument"));
    assert_eq!(p.verdict_at("T1", t(10_000)), WITHHELD);
    // Another report of the document already shown (the observer attached late, a second
    // client) is no navigation either.
    p.committed("T1", "L1", FRESH, t(2000));
    p.committed("T1", "L1", Commit::NavigateReply, t(2000));
    assert_eq!(p.verdict_at("T1", t(10_000)), WITHHELD);
    // A commit whose start was never reported (or a word this relay does not know) cannot be
    // told from a history navigation: withheld, until a reply confirms it was fresh.
    p.committed("T1", "L2", FRESH, t(3000));
    assert_eq!(p.verdict_at("T1", t(10_000)), WITHHELD);
    p.navigation_started("T1", "L3", NavigationKind::parse("prerenderActivation"));
    p.committed("T1", "L3", FRESH, t(4000));
    assert_eq!(p.verdict_at("T1", t(10_000)), WITHHELD);
    p.committed("T1", "L3", Commit::NavigateReply, t(3900));
    assert_eq!(p.verdict_at("T1", t(10_000)), Ok(()));
    // A reply naming a loader is itself a fresh commit (a client that never enabled Page).
    p.typed_into("T1", 2, UNKNOWN, t(11_000));
    p.committed("T1", "L4", Commit::NavigateReply, t(12_000));
    assert_eq!(p.verdict_at("T1", t(20_000)), Ok(()));
}

#[test]
fn a_document_out_of_history_comes_back_with_what_was_typed_into_it() {
    let p = policy(true);
    navigate(&p, "T1", "La", t(0));
    p.typed_into("T1", 1, PASSWORD, t(100));
    navigate(&p, "T1", "Lb", t(1000));
    assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
    // Back, from the back/forward cache: the password page as it was.
    p.navigation_started(
        "T1",
        "Lx",
        NavigationKind::parse("historyDifferentDocument"),
    );
    p.committed("T1", "La", BFCACHE, t(6000));
    assert_eq!(p.verdict_at("T1", t(9000)), WITHHELD);
    // Forward again, from the cache: the clean page.
    p.committed("T1", "Lb", BFCACHE, t(10_000));
    assert_eq!(p.verdict_at("T1", t(15_000)), Ok(()));
    // Back without the cache: a new loader, whose fields the browser refills from history. It
    // cannot be matched to a document, and one of them was withheld: withheld.
    p.navigation_started(
        "T1",
        "Lc",
        NavigationKind::parse("historyDifferentDocument"),
    );
    p.committed("T1", "Lc", FRESH, t(16_000));
    assert_eq!(p.verdict_at("T1", t(20_000)), WITHHELD);
    // A fresh navigation (a reload refills nothing) ends it.
    navigate(&p, "T1", "Ld", t(21_000));
    assert_eq!(p.verdict_at("T1", t(25_000)), Ok(()));
    p.navigation_started("T1", "Le", NavigationKind::parse("reload"));
    p.committed("T1", "Le", FRESH, t(26_000));
    assert_eq!(p.verdict_at("T1", t(30_000)), Ok(()));
}

#[test]
fn typing_reported_after_its_document_was_left_still_follows_it_back() {
    let p = policy(true);
    navigate(&p, "T1", "La", t(0));
    navigate(&p, "T1", "Lb", t(1000));
    // The keystrokes at 900 (into La) reach the policy after the commit of Lb.
    p.typed_into("T1", 1, UNKNOWN, t(900));
    assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
    p.committed("T1", "La", BFCACHE, t(6000));
    assert_eq!(p.verdict_at("T1", t(9000)), WITHHELD);
    // A kind read back late for a burst of a left document reaches that document.
    let q = policy(true);
    navigate(&q, "T1", "La", t(0));
    q.typed_into("T1", 1, TEXT, t(100));
    navigate(&q, "T1", "Lb", t(1000));
    q.burst_kind("T1", 1, PASSWORD);
    assert_eq!(q.verdict_at("T1", t(5000)), Ok(()));
    q.committed("T1", "La", BFCACHE, t(6000));
    assert_eq!(q.verdict_at("T1", t(9000)), WITHHELD);
}

#[test]
fn sensitive_focus_withholds_while_it_lasts() {
    let p = policy(true);
    p.focused_at("T1", Some(CODE), t(0));
    assert_eq!(p.verdict_at("T1", t(0)), Err(Withheld::SensitiveFocus));
    p.focused_at("T1", Some(FieldKind::Marked), t(100));
    assert_eq!(p.verdict_at("T1", t(100)), Err(Withheld::SensitiveFocus));
    p.focused_at("T1", Some(FieldKind::NotEditable), t(200));
    assert_eq!(p.verdict_at("T1", t(200)), Ok(()));
    assert_eq!(
        p.focused_kind_at("T1", t(200)),
        Some(FieldKind::NotEditable)
    );
}

#[test]
fn a_late_question_gets_the_focus_of_its_moment_and_a_report_just_after_counts() {
    // The traffic reader asks about a screenshot at t(0) after focus moved on at t(50).
    let p = policy(true);
    p.focused_at("T1", Some(FieldKind::NotEditable), t(0));
    p.focused_at("T1", Some(PASSWORD), t(50));
    p.focused_at("T1", None, t(90));
    assert_eq!(p.verdict_at("T1", t(0)), Ok(()));
    assert_eq!(p.verdict_at("T1", t(60)), Err(Withheld::SensitiveFocus));
    assert_eq!(p.focused_kind_at("T1", t(60)), Some(PASSWORD));
    assert_eq!(p.verdict_at("T1", t(95)), Ok(()));
    // A report arriving within the slack after the question still withholds.
    assert_eq!(p.verdict_at("T1", t(45)), Err(Withheld::SensitiveFocus));
    assert_eq!(p.focused_kind_at("T1", t(45)), Some(PASSWORD));
    // Before any report: unknown.
    assert_eq!(p.focused_kind_at("T1", t(0) - Duration::from_secs(1)), None);
}

#[test]
fn a_forgotten_history_answers_with_its_oldest_kept_report() {
    let p = policy(true);
    p.focused_at("T1", Some(PASSWORD), t(0));
    for i in 1..=FOCUS_HISTORY as u64 {
        p.focused_at("T1", Some(TEXT), t(1000 + i));
    }
    // The password report is gone; a question about t(10) gets the oldest kept one, not
    // "unknown".
    assert_eq!(p.focused_kind_at("T1", t(10)), Some(TEXT));
    assert_eq!(p.verdict_at("T1", t(5000)), Ok(()));
}

#[test]
fn documents_left_long_ago_are_forgotten_on_the_safe_side() {
    let p = policy(true);
    navigate(&p, "T1", "L0", t(0));
    p.typed_into("T1", 1, PASSWORD, t(10));
    for i in 1..=(MAX_LEFT as u64 + 2) {
        navigate(&p, "T1", &format!("L{i}"), t(i * 100));
    }
    assert_eq!(p.verdict_at("T1", t(10_000)), Ok(()));
    // The password document is forgotten; an unknown document out of history may be it.
    p.navigation_started(
        "T1",
        "Lh",
        NavigationKind::parse("historyDifferentDocument"),
    );
    p.committed("T1", "Lh", FRESH, t(20_000));
    assert_eq!(p.verdict_at("T1", t(30_000)), WITHHELD);
}

#[test]
fn a_registered_value_in_a_field_that_shows_it_withholds_until_navigation() {
    let p = policy(true);
    // Into a text field: shown until the page navigates, for the relay's frames and for a
    // producer that cannot tell the page of its picture.
    p.typed_into("T1", 1, TEXT, t(0));
    p.burst_named("T1", 1);
    assert_eq!(
        p.verdict_at("T1", t(60_000)),
        Err(Withheld::NamedValueShown)
    );
    assert!(p.named_value_shown());
    assert_eq!(p.verdict_at("T2", t(60_000)), Ok(()));
    navigate(&p, "T1", "L1", t(1));
    assert_eq!(p.verdict_at("T1", t(60_000)), Ok(()));
    assert!(!p.named_value_shown());
    // Into a password field: masked on screen; the sensitive rule withholds the relay's frames
    // as before, but the value is not shown.
    p.typed_into("T1", 2, PASSWORD, t(70_000));
    p.burst_named("T1", 2);
    assert!(!p.named_value_shown());
    assert_eq!(p.verdict_at("T1", t(99_000)), WITHHELD);
    // Unidentified, then read back as text: still shown (the reading never lets it go).
    navigate(&p, "T1", "L2", t(100_000));
    p.typed_into("T1", 3, UNKNOWN, t(100_001));
    p.burst_named("T1", 3);
    p.burst_kind("T1", 3, TEXT);
    assert!(p.named_value_shown());
    // Gone with its document, back with it from history.
    p.navigation_started("T1", "L3", NavigationKind::parse("differentDocument"));
    p.committed("T1", "L3", FRESH, t(100_002));
    assert!(!p.named_value_shown());
    p.committed("T1", "L2", BFCACHE, t(100_003));
    assert_eq!(p.verdict_at("T1", t(200_000)), WITHHELD);
    // Named late, after its document was left: the left document keeps it.
    let q = policy(true);
    q.typed_into("T1", 4, TEXT, t(0));
    navigate(&q, "T1", "M1", t(1));
    q.burst_named("T1", 4);
    assert!(!q.named_value_shown());
    q.committed("T1", "M0", BFCACHE, t(2));
    assert_eq!(q.verdict_at("T1", t(60_000)), WITHHELD);
}

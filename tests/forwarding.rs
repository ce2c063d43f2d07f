//! Every intercepted call reaches the real uGNI exactly once, with the caller's arguments but
//! the routing byte, and its return code comes back unchanged.

mod common;
use common::*;

#[test]
fn every_post_is_forwarded_once_with_payload_intact_and_return_codes_propagated() {
    let script = "fma 64 20 0 rdma 65536 6 0 fmaget 256 5 0 rdmaget 16384 4 0 cqwrite 3 0 \
                  ct 128 4 0 ctcqw 3 0 smsg 100 7 smsgtag 20 5 badpost nullpost";
    let r = Launch::driver("forward", script).run();
    r.assert_ok();
    // The driver checked every byte and every completion; it counts its own posts.
    assert!(r.stdout.contains("posts=54 errors=0"), "{}", r.stdout);
    let per_call = [
        ("GNI_PostFma", 20 + 5 + 1 + 1),
        ("GNI_PostRdma", 6 + 4),
        ("GNI_PostCqWrite", 3),
        ("GNI_CtPostFma", 1),
        ("GNI_CtPostCqWrite", 1),
        ("GNI_SmsgSend", 7),
        ("GNI_SmsgSendWTag", 5),
    ];
    for (call, n) in per_call {
        assert_eq!(r.posts(call).len(), n, "{call} reached the emulator {} times, expected {n}", r.posts(call).len());
    }
    // Return codes: the emulator's rc for the bad posts is what the program saw.
    let bad: Vec<_> =
        r.posts("GNI_PostFma").iter().filter(|v| v["rc"] != 0).map(|v| v["rc"].as_i64().unwrap()).collect();
    assert_eq!(bad.len(), 2, "the unregistered and the NULL post fail in the emulator");
    assert!(r.stdout.contains(&format!("badpost rc={}", bad[0])), "{}", r.stdout);
    assert!(r.stdout.contains("nullpost rc="), "{}", r.stdout);
    assert!(bad.iter().all(|&rc| rc != 0));
}

#[test]
fn the_same_program_without_the_library_reaches_the_emulator_identically_but_for_routing() {
    let script = "fma 64 10 0 rdma 65536 3 0x100 cqwrite 2 0x3 smsg 10 3";
    let with = Launch::driver("ident-with", script).run();
    let without = Launch::driver("ident-without", script).no_preload().run();
    with.assert_ok();
    without.assert_ok();
    assert_eq!(with.stdout, without.stdout, "the library never writes to stdout");
    let strip = |r: &Run| -> Vec<(String, u64, u64)> {
        r.log
            .iter()
            .filter(|v| v["call"].as_str().unwrap().starts_with("GNI_Post"))
            .map(|v| {
                (
                    v["call"].as_str().unwrap().to_string(),
                    v["length"].as_u64().unwrap(),
                    v["dlvr_mode"].as_u64().unwrap() & 0xff00,
                )
            })
            .collect()
    };
    assert_eq!(strip(&with), strip(&without), "same calls, same lengths, same flag bits");
}

#[test]
fn non_adaptive_requests_pass_untouched_and_flag_bits_survive() {
    // IN_ORDER 0x3, NMIN_HASH 0x8, MIN_HASH 0x10, NO_ADAPT 0x1, and the same with ORDERED_TAIL.
    let script = "fma 64 3 0x3 fma 64 3 0x8 fma 64 3 0x10 fma 64 3 0x1 fma 64 3 0x103 fma 64 3 0x110 \
                  rdma 65536 3 0x3 rdma 65536 3 0x10 \
                  fma 64 3 0x100 rdma 65536 4 0x180 rdma 65536 4 0x120";
    let r = Launch::driver("intent", script).run();
    r.assert_ok();
    let fma = r.dlvr_modes("GNI_PostFma");
    assert_eq!(
        &fma[..18],
        &[0x3, 0x3, 0x3, 0x8, 0x8, 0x8, 0x10, 0x10, 0x10, 0x1, 0x1, 0x1, 0x103, 0x103, 0x103, 0x110, 0x110, 0x110]
    );
    let rdma = r.dlvr_modes("GNI_PostRdma");
    assert_eq!(
        &rdma[..6],
        &[0x3, 0x3, 0x3, 0x10, 0x10, 0x10],
        "non-adaptive RDMA above the threshold is untouched too"
    );
    // Adaptive requests with ORDERED_TAIL are routed and keep the flag.
    assert_eq!(&fma[18..], &[0x180, 0x180, 0x180], "below the threshold: High Bias, flag kept");
    for m in &rdma[6..] {
        assert_eq!(m & 0xff00, 0x100, "ORDERED_TAIL kept on {m:#x}");
        assert!([AD0, AD1, AD2, AD3].contains(&(m & 0xff)), "only adaptive modes are chosen: {m:#x}");
    }
}

#[test]
fn collective_engine_posts_go_out_as_the_caller_made_them() {
    // Fixed ADAPTIVE3 rewrites every adaptive request; automatic routing decides the large ones.
    // A collective-engine post keeps its routing under both, and is counted as passed through.
    for mode in ["ADAPTIVE3", "auto"] {
        let script = "fma 64 1 0 cepost 64 0 cepost 65536 0x20 rdma 65536 2 0 cepost 65536 0 cepost 8 0x103";
        let r = Launch::driver(&format!("ce-{mode}"), script).env("AAR_MODE", mode).run();
        r.assert_ok();
        let ce: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("cepost ")).collect();
        assert_eq!(
            ce,
            [
                "cepost rc=12 dlvr_out=0x0",
                "cepost rc=12 dlvr_out=0x20",
                "cepost rc=12 dlvr_out=0x0",
                "cepost rc=12 dlvr_out=0x103"
            ],
            "{mode}: forwarded (the emulator has no collective engine: GNI_RC_ILLEGAL_OP) with the caller's routing"
        );
        assert_eq!(
            r.dlvr_modes("GNI_PostFma"),
            [AD3, 0x0, 0x20, 0x0, 0x103],
            "{mode}: the FMA PUT is routed, and the emulator got each CE post as the caller made it"
        );
        let rec = &r.records()[0];
        assert_eq!(rec["apis"]["uGNI"]["refused"], 4, "{mode}: the CE posts the emulator refused: {}", rec["apis"]);
    }
}

#[test]
fn chained_posts_route_the_head_and_never_touch_the_elements() {
    let r = Launch::driver("chain", "ct 64 8 0 ct 4096 4 0x100 ctcqw 5 0 ct 64 3 0x3").run();
    r.assert_ok();
    assert_eq!(r.stdout.matches("unchanged=1").count(), 4, "{}", r.stdout);
    let heads = r.dlvr_modes("GNI_CtPostFma");
    assert_eq!(
        heads,
        [AD3, 0x100 | AD3, 0x3],
        "head routed (High Bias below the threshold), flags kept, IN_ORDER untouched"
    );
    assert_eq!(r.dlvr_modes("GNI_CtPostCqWrite"), [AD3]);
    // The emulator walked the whole chain: the shim did not cut or rewrite it.
    let ct = r.posts("GNI_CtPostFma");
    assert_eq!(ct[0]["chain_elements"], 8);
    assert_eq!(ct[1]["chain_elements"], 4);
}

/// A call uGNI refuses sent nothing: an SMSG send without a credit (`GNI_RC_NOT_DONE`, which a
/// program meets when it sends faster than its peer receives, and answers by sending the message
/// again) and a post from unregistered memory are counted as refused, not with the messages that
/// went out, so that a message sent again is counted once.
#[test]
fn a_refused_short_message_or_post_is_counted_as_refused_not_as_sent() {
    let r = Launch::driver("refused", "smsgburst 16 100 badpost smsg 16 3").run();
    r.assert_ok();
    let line = r.stdout.lines().find(|l| l.starts_with("smsgburst ")).expect("the burst's line");
    let field = |name: &str| -> u64 {
        let word = line.split(' ').find_map(|w| w.strip_prefix(&format!("{name}="))).expect(name);
        word.parse().unwrap()
    };
    let (sent, refused) = (field("sent"), field("refused"));
    assert!(sent > 0 && refused > 0 && sent + refused == 100, "{line}");
    assert_eq!(field("received"), sent, "{line}");
    let sends = || r.log.iter().filter(|v| v["call"] == "GNI_SmsgSend" || v["call"] == "GNI_PostFma");
    let went_out = sends().filter(|v| v["rc"] == 0);
    let uncounted = sends().filter(|v| v["rc"] != 0);
    let rec = &r.records()[0];
    assert_eq!(rec["apis"]["uGNI"]["messages"], went_out.count() as u64, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["uGNI"]["messages"], sent + 3, "{}", rec["apis"]);
    assert_eq!(rec["apis"]["uGNI"]["refused"], refused + 1, "the credit-less sends and the bad post: {}", rec["apis"]);
    assert_eq!(uncounted.count() as u64, refused + 1);
    assert_eq!(rec["apis"]["DMAPP"]["refused"], 0, "{}", rec["apis"]);
}

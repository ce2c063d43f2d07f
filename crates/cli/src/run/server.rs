//! The PMI server of one job: the subset of the simple PMI-1 wire protocol that MPICH's hydra
//! serves and libpmi.so.0 speaks (init, maxes, appnum, universe size, KVS name, put, get, barrier,
//! finalize, abort), over the wire format of `pmi::wire`.
//!
//! Each key is put once: a put of a key the KVS holds (the launcher's `PMI_process_mapping`,
//! another rank's key, its own) is refused and the key keeps its first value, as hydra's KVS
//! does (built with its key check, `PMI_KEY_CHECK`: `rc=-1 msg=duplicate_key...`); otherwise
//! one rank could change what every other rank reads. The KVS holds at most [`KVS_MAX_BYTES`];
//! the keys of libpmi.so.0's `PMI_Allgather` calls that every rank has read are dropped, so that a
//! job may call it any number of times.

use pmi::mapping::ProcessMapping;
use pmi::wire::{allgather_seq, check_word, quoted, Message, KEYLEN_MAX, KVSNAME_MAX, PROCESS_MAPPING_KEY, VALLEN_MAX};
use std::collections::HashMap;

/// The most bytes of keys and values the job's KVS holds: a put past it is refused. A rank's
/// business card (MPICH's, a uGNI program's address exchange) is a few hundred bytes, a few KiB
/// with `PMI_Allgather`, so 4096 ranks (`aar run`'s most) need a few MiB; a rank that puts more
/// is in a loop (each put would grow the launcher by its size, for ever) or should pass its
/// data another way.
pub const KVS_MAX_BYTES: usize = 64 << 20;

/// What a message asks of the launcher.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answers to send: (rank, message). A barrier's last entry answers every rank.
    Replies(Vec<(usize, Message)>),
    /// A put refused: answer the rank with `reply` (an error) and, the first time the rank is
    /// refused for this reason, say `say` (one line, without the `aar run: ` it starts with).
    Refused { reply: Message, say: Option<String> },
    /// The rank called PMI_Abort with this exit code: end the job.
    Abort(i32),
}

/// A KVS value and who put it.
struct Entry {
    value: String,
    /// The rank that put it; `None` for the launcher's own keys.
    by: Option<usize>,
}

/// The job's KVS and barrier.
pub struct Server {
    size: usize,
    kvsname: String,
    kvs: HashMap<String, Entry>,
    /// The bytes of keys and values in `kvs`.
    kvs_bytes: usize,
    /// The ranks told of a refused overwrite, and of the KVS full.
    said_overwrite: Vec<bool>,
    said_full: Vec<bool>,
    in_barrier: Vec<bool>,
}

impl Server {
    /// A job of `size` ranks placed by `mapping`, with KVS `kvsname`.
    pub fn new(size: usize, kvsname: String, mapping: &ProcessMapping) -> Self {
        let (key, value) = (PROCESS_MAPPING_KEY.to_owned(), mapping.to_string());
        let kvs_bytes = key.len() + value.len();
        let kvs = HashMap::from([(key, Entry { value, by: None })]);
        Server {
            size,
            kvsname,
            kvs,
            kvs_bytes,
            said_overwrite: vec![false; size],
            said_full: vec![false; size],
            in_barrier: vec![false; size],
        }
    }

    /// The ranks waiting in a barrier.
    pub fn waiting(&self) -> Vec<usize> {
        (0..self.size).filter(|&r| self.in_barrier[r]).collect()
    }

    /// Serve one message of `rank`.
    pub fn handle(&mut self, rank: usize, msg: &Message) -> Outcome {
        let one = |m: Message| Outcome::Replies(vec![(rank, m)]);
        match msg.cmd.as_str() {
            "init" => match msg.get_int("pmi_version") {
                Some(1) => {
                    one(Message::new("response_to_init").with("pmi_version", 1).with("pmi_subversion", 1).with("rc", 0))
                }
                v => one(Message::new("response_to_init")
                    .with("pmi_version", 1)
                    .with("pmi_subversion", 1)
                    .with("rc", -1)
                    .with("msg", format!("aar_run_serves_PMI-1_only,_not_version_{}", v.unwrap_or(-1)))),
            },
            "get_maxes" => one(Message::new("maxes")
                .with("rc", 0)
                .with("kvsname_max", KVSNAME_MAX)
                .with("keylen_max", KEYLEN_MAX)
                .with("vallen_max", VALLEN_MAX)),
            "get_appnum" => one(Message::new("appnum").with("appnum", 0)),
            "get_universe_size" => one(Message::new("universe_size").with("size", self.size)),
            "get_my_kvsname" => one(Message::new("my_kvsname").with("kvsname", &self.kvsname)),
            "put" => self.put(rank, msg),
            "get" => one(self.get(msg)),
            "barrier_in" => {
                self.in_barrier[rank] = true;
                if self.in_barrier.iter().all(|&b| b) {
                    self.in_barrier.fill(false);
                    self.drop_read_allgathers();
                    Outcome::Replies((0..self.size).map(|r| (r, Message::new("barrier_out"))).collect())
                } else {
                    Outcome::Replies(Vec::new())
                }
            }
            "finalize" => one(Message::new("finalize_ack")),
            "abort" => Outcome::Abort(msg.get_int("exitcode").and_then(|c| i32::try_from(c).ok()).unwrap_or(1)),
            other => one(Message::new(other).with("rc", -1).with("msg", format!("aar_run_does_not_serve_cmd={other}"))),
        }
    }

    /// At a barrier every rank entered: the keys of every `PMI_Allgather` but the latest go.
    /// The ranks call the collectives in one order, so each rank has returned from every
    /// allgather before this barrier, its reads done, but the one whose own barrier this may be
    /// (every rank put its part of it, none has read yet): the one of the highest number.
    fn drop_read_allgathers(&mut self) {
        let Some(latest) = self.kvs.keys().filter_map(|k| allgather_seq(k)).max() else { return };
        let kvs_bytes = &mut self.kvs_bytes;
        self.kvs.retain(|k, e| {
            let keep = allgather_seq(k).is_none_or(|seq| seq == latest);
            if !keep {
                *kvs_bytes -= k.len() + e.value.len();
            }
            keep
        });
    }

    /// The bytes of keys and values each rank holds in the KVS (said when it is full).
    fn put_bytes(&self) -> Vec<usize> {
        let mut put = vec![0; self.size];
        for (k, e) in &self.kvs {
            if let Some(by) = e.by {
                put[by] += k.len() + e.value.len();
            }
        }
        put
    }

    fn check_kvs(&self, msg: &Message) -> Result<(), String> {
        match msg.get("kvsname") {
            Some(name) if name == self.kvsname => Ok(()),
            Some(name) => Err(format!("no_KVS_{name}:_this_job_has_KVS_{}", self.kvsname)),
            None => Err("no_kvsname".into()),
        }
    }

    fn put(&mut self, rank: usize, msg: &Message) -> Outcome {
        let checked = self.check_kvs(msg).and_then(|()| match (msg.get("key"), msg.get("value")) {
            (Some(k), Some(v)) => {
                check_word("key", k, KEYLEN_MAX - 1)
                    .and(check_word("value", v, VALLEN_MAX - 1))
                    .map_err(|e| e.replace(' ', "_"))?;
                Ok((k, v))
            }
            _ => Err("put_needs_key_and_value".into()),
        });
        let (k, v) = match checked {
            Ok(kv) => kv,
            Err(why) => return Outcome::Replies(vec![(rank, refusal(why))]),
        };
        if let Some(first) = self.kvs.get(k) {
            let whose = match first.by {
                None => "which aar run put: where the ranks run".to_owned(),
                Some(by) if by == rank => "which it put itself".to_owned(),
                Some(by) => format!("which rank {by} put"),
            };
            let say = !std::mem::replace(&mut self.said_overwrite[rank], true);
            return Outcome::Refused {
                reply: refusal(format!("duplicate_key_{k}")),
                say: say.then(|| {
                    format!(
                        "rank {rank} tried to overwrite KVS key {}, {whose}; the put was answered with an error \
                         (PMI_KVS_Put fails) and the key keeps its first value. Each key is put once in a job: \
                         give each rank's keys its rank. Further overwrites by rank {rank} are refused without \
                         a line.",
                        quoted(k)
                    )
                }),
            };
        }
        let size = k.len() + v.len();
        if self.kvs_bytes + size > KVS_MAX_BYTES {
            let say = !std::mem::replace(&mut self.said_full[rank], true);
            return Outcome::Refused {
                reply: refusal(format!("the_KVS_is_full:_{KVS_MAX_BYTES}_bytes")),
                say: say.then(|| {
                    let put = self.put_bytes();
                    let (top, most) =
                        put.iter().enumerate().max_by_key(|&(r, b)| (b, std::cmp::Reverse(r))).unwrap_or((0, &0));
                    format!(
                        "rank {rank}'s put of KVS key {} was answered with an error (PMI_KVS_Put fails): the job's \
                         KVS holds {} bytes of keys and values, and {KVS_MAX_BYTES} is the most aar run keeps (rank \
                         {top} put the most, {most} bytes). A rank's business card takes a few hundred bytes; a rank \
                         that puts more is in a loop, or should pass its data another way (a file in \
                         $AAR_EMU_JOB_DIR). Further puts refused to rank {rank} are not said.",
                        quoted(k),
                        self.kvs_bytes
                    )
                }),
            };
        }
        self.kvs.insert(k.to_owned(), Entry { value: v.to_owned(), by: Some(rank) });
        self.kvs_bytes += size;
        Outcome::Replies(vec![(rank, Message::new("put_result").with("rc", 0).with("msg", "success"))])
    }

    fn get(&self, msg: &Message) -> Message {
        let found = self.check_kvs(msg).and_then(|()| {
            let key = msg.get("key").ok_or("get_needs_a_key")?;
            self.kvs.get(key).map(|e| &e.value).ok_or_else(|| format!("key_{key}_not_found"))
        });
        match found {
            Ok(v) => Message::new("get_result").with("rc", 0).with("msg", "success").with("value", v),
            Err(why) => Message::new("get_result").with("rc", -1).with("msg", why),
        }
    }
}

/// A put's error answer.
fn refusal(why: String) -> Message {
    Message::new("put_result").with("rc", -1).with("msg", why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(size: usize) -> Server {
        Server::new(size, "kvs".into(), &ProcessMapping::block(size, 2).unwrap())
    }

    fn replies(o: Outcome) -> Vec<(usize, Message)> {
        match o {
            Outcome::Replies(r) => r,
            Outcome::Refused { reply, say } => panic!("refused {reply}: {say:?}"),
            Outcome::Abort(c) => panic!("abort {c}"),
        }
    }

    #[test]
    fn a_barrier_answers_all_ranks_when_the_last_enters() {
        let mut s = server(3);
        let b = Message::new("barrier_in");
        assert!(replies(s.handle(2, &b)).is_empty());
        assert!(replies(s.handle(0, &b)).is_empty());
        assert_eq!(s.waiting(), vec![0, 2]);
        let out = replies(s.handle(1, &b));
        assert_eq!(out.iter().map(|(r, _)| *r).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(s.waiting().is_empty());
    }

    /// Each allgather's keys go at the barrier of the next one (or any later barrier), so a job
    /// that calls it in a loop keeps two allgathers' keys at most; other keys stay.
    #[test]
    fn an_allgather_every_rank_has_read_is_dropped_at_the_next_barrier() {
        let mut s = server(2);
        let put = |k: &str| Message::new("put").with("kvsname", "kvs").with("key", k).with("value", "00ff");
        let held = |s: &Server| {
            let mut keys: Vec<&str> = s.kvs.keys().map(String::as_str).collect();
            keys.sort();
            keys.join(" ")
        };
        replies(s.handle(0, &put("card-0")));
        let mut bytes = Vec::new();
        for seq in 0..1000 {
            for r in 0..2 {
                replies(s.handle(r, &put(&pmi::wire::allgather_key(seq, r as i32, 0))));
            }
            replies(s.handle(0, &Message::new("barrier_in")));
            replies(s.handle(1, &Message::new("barrier_in")));
            bytes.push(s.kvs_bytes);
        }
        assert_eq!(held(&s), "PMI_process_mapping aar-ag999-0-0 aar-ag999-1-0 card-0", "the latest only");
        // The mapping, the card and one allgather of two 13-byte keys at most (1000 puts of 17
        // to 19 bytes each would be 36,000).
        let most = s.kvs["PMI_process_mapping"].value.len() + 19 + 10 + 2 * (13 + 4);
        assert!(bytes.iter().all(|&b| b <= most), "no growth: {:?}", bytes.iter().max());
        assert_eq!(s.put_bytes(), [6 + 4 + 13 + 4, 13 + 4]);
        // A plain barrier after it keeps the latest: a rank may still be reading it.
        replies(s.handle(0, &Message::new("barrier_in")));
        replies(s.handle(1, &Message::new("barrier_in")));
        assert_eq!(held(&s), "PMI_process_mapping aar-ag999-0-0 aar-ag999-1-0 card-0");
        assert_eq!(pmi::wire::allgather_seq("aar-ag12-3-0"), Some(12));
        assert_eq!(pmi::wire::allgather_seq("aar-agx-3-0"), None);
        assert_eq!(pmi::wire::allgather_seq("card-0"), None);
    }

    #[test]
    fn the_kvs_holds_puts_and_the_process_mapping() {
        let mut s = server(3);
        let put = Message::new("put").with("kvsname", "kvs").with("key", "k").with("value", "v");
        assert_eq!(replies(s.handle(0, &put))[0].1.get("rc"), Some("0"));
        let get = |k: &str| Message::new("get").with("kvsname", "kvs").with("key", k);
        assert_eq!(replies(s.handle(1, &get("k")))[0].1.get("value"), Some("v"));
        assert_eq!(replies(s.handle(1, &get(PROCESS_MAPPING_KEY)))[0].1.get("value"), Some("(vector,(0,1,2),(1,1,1))"));
        assert_eq!(replies(s.handle(1, &get("none")))[0].1.get("rc"), Some("-1"));
        let other = Message::new("get").with("kvsname", "other").with("key", "k");
        assert_eq!(replies(s.handle(1, &other))[0].1.get("rc"), Some("-1"));
    }

    fn put(k: &str, v: &str) -> Message {
        Message::new("put").with("kvsname", "kvs").with("key", k).with("value", v)
    }

    fn get(s: &mut Server, k: &str) -> Option<String> {
        let answer = &replies(s.handle(0, &Message::new("get").with("kvsname", "kvs").with("key", k)))[0].1;
        answer.get("value").map(str::to_owned)
    }

    /// A refused put: its answer's msg and the line said, if any.
    fn refused(o: Outcome) -> (String, Option<String>) {
        match o {
            Outcome::Refused { reply, say } => {
                assert_eq!((reply.cmd.as_str(), reply.get("rc")), ("put_result", Some("-1")), "{reply}");
                (reply.get("msg").unwrap().to_owned(), say)
            }
            other => panic!("not refused: {other:?}"),
        }
    }

    /// No rank changes what the others read: not the launcher's key, not another rank's, not its
    /// own; the first time a rank tries, the line names it, the key and whose the key is.
    #[test]
    fn a_key_is_put_once_and_keeps_its_first_value() {
        let mut s = server(3);
        let mapping = get(&mut s, PROCESS_MAPPING_KEY).unwrap();
        assert_eq!(replies(s.handle(0, &put("card-0", "first")))[0].1.get("rc"), Some("0"));
        let (msg, say) = refused(s.handle(1, &put(PROCESS_MAPPING_KEY, "junk")));
        assert_eq!(msg, "duplicate_key_PMI_process_mapping");
        let tail = "the put was answered with an error (PMI_KVS_Put fails) and the key keeps its first value. \
                    Each key is put once in a job: give each rank's keys its rank. Further overwrites by rank 1 \
                    are refused without a line.";
        assert_eq!(
            say.unwrap(),
            format!(
                "rank 1 tried to overwrite KVS key \"PMI_process_mapping\", which aar run put: where the ranks run; \
                 {tail}"
            )
        );
        assert_eq!(refused(s.handle(1, &put("card-0", "junk"))), ("duplicate_key_card-0".into(), None), "said once");
        let (_, say) = refused(s.handle(2, &put("card-0", "junk")));
        assert!(say.unwrap().starts_with("rank 2 tried to overwrite KVS key \"card-0\", which rank 0 put; "));
        let (_, say) = refused(s.handle(0, &put("card-0", "first")));
        assert!(say.unwrap().starts_with("rank 0 tried to overwrite KVS key \"card-0\", which it put itself; "));
        assert_eq!(get(&mut s, PROCESS_MAPPING_KEY).unwrap(), mapping);
        assert_eq!(get(&mut s, "card-0").unwrap(), "first");
    }

    /// Puts fill the KVS up to [`KVS_MAX_BYTES`] of keys and values, none past it; each rank
    /// refused is told once, with the rank that put the most; gets go on.
    #[test]
    fn the_kvs_holds_at_most_kvs_max_bytes() {
        let mut s = server(2);
        let mapping = get(&mut s, PROCESS_MAPPING_KEY).unwrap();
        let value = "v".repeat(VALLEN_MAX - 1);
        let mut held = PROCESS_MAPPING_KEY.len() + mapping.len();
        assert!(replies(s.handle(0, &put("small", "x")))[0].1.get("rc") == Some("0"));
        held += "small".len() + 1;
        let mut i = 0;
        let refusal = loop {
            assert!(i < 2 * KVS_MAX_BYTES / VALLEN_MAX, "{held} bytes held and no put refused");
            let key = format!("fill-{i:08}");
            match s.handle(1, &put(&key, &value)) {
                Outcome::Replies(r) => assert_eq!(r[0].1.get("rc"), Some("0")),
                o => break refused(o),
            }
            held += key.len() + value.len();
            i += 1;
        };
        let each = "fill-00000000".len() + value.len();
        assert!(held <= KVS_MAX_BYTES && held + each > KVS_MAX_BYTES, "{held} bytes held after {i} puts");
        assert_eq!(refusal.0, format!("the_KVS_is_full:_{KVS_MAX_BYTES}_bytes"));
        assert_eq!(
            refusal.1.unwrap(),
            format!(
                "rank 1's put of KVS key \"fill-{i:08}\" was answered with an error (PMI_KVS_Put fails): the job's \
                 KVS holds {held} bytes of keys and values, and {KVS_MAX_BYTES} is the most aar run keeps (rank 1 \
                 put the most, {} bytes). A rank's business card takes a few hundred bytes; a rank that puts more \
                 is in a loop, or should pass its data another way (a file in $AAR_EMU_JOB_DIR). Further puts \
                 refused to rank 1 are not said.",
                i * each
            )
        );
        assert_eq!(refused(s.handle(1, &put("more", &value))).1, None, "said once for rank 1");
        let (_, say) = refused(s.handle(0, &put("more", &value)));
        assert!(say.unwrap().starts_with("rank 0's put of KVS key \"more\" was answered"));
        assert_eq!(get(&mut s, "small").as_deref(), Some("x"));
        assert_eq!(get(&mut s, PROCESS_MAPPING_KEY).unwrap(), mapping);
    }

    #[test]
    fn abort_carries_the_exit_code() {
        assert_eq!(server(2).handle(1, &Message::new("abort").with("exitcode", 7)), Outcome::Abort(7));
    }
}

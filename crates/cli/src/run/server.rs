//! The PMI server of one job: the subset of the simple PMI-1 wire protocol that MPICH's hydra
//! serves and libpmi.so.0 speaks (init, maxes, appnum, universe size, KVS name, put, get, barrier,
//! finalize, abort), over the wire format of `pmi::wire`.

use pmi::mapping::ProcessMapping;
use pmi::wire::{check_word, Message, KEYLEN_MAX, KVSNAME_MAX, PROCESS_MAPPING_KEY, VALLEN_MAX};
use std::collections::HashMap;

/// What a message asks of the launcher.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answers to send: (rank, message). A barrier's last entry answers every rank.
    Replies(Vec<(usize, Message)>),
    /// The rank called PMI_Abort with this exit code: end the job.
    Abort(i32),
}

/// The job's KVS and barrier.
pub struct Server {
    size: usize,
    kvsname: String,
    kvs: HashMap<String, String>,
    in_barrier: Vec<bool>,
}

impl Server {
    /// A job of `size` ranks placed by `mapping`, with KVS `kvsname`.
    pub fn new(size: usize, kvsname: String, mapping: &ProcessMapping) -> Self {
        let kvs = HashMap::from([(PROCESS_MAPPING_KEY.to_owned(), mapping.to_string())]);
        Server { size, kvsname, kvs, in_barrier: vec![false; size] }
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
            "put" => one(self.put(msg)),
            "get" => one(self.get(msg)),
            "barrier_in" => {
                self.in_barrier[rank] = true;
                if self.in_barrier.iter().all(|&b| b) {
                    self.in_barrier.fill(false);
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

    fn check_kvs(&self, msg: &Message) -> Result<(), String> {
        match msg.get("kvsname") {
            Some(name) if name == self.kvsname => Ok(()),
            Some(name) => Err(format!("no_KVS_{name}:_this_job's_is_{}", self.kvsname)),
            None => Err("no_kvsname".into()),
        }
    }

    fn put(&mut self, msg: &Message) -> Message {
        let checked = self.check_kvs(msg).and_then(|()| match (msg.get("key"), msg.get("value")) {
            (Some(k), Some(v)) => {
                check_word("key", k, KEYLEN_MAX - 1)
                    .and(check_word("value", v, VALLEN_MAX - 1))
                    .map_err(|e| e.replace(' ', "_"))?;
                Ok((k, v))
            }
            _ => Err("put_needs_key_and_value".into()),
        });
        match checked {
            Ok((k, v)) => {
                self.kvs.insert(k.to_owned(), v.to_owned());
                Message::new("put_result").with("rc", 0).with("msg", "success")
            }
            Err(why) => Message::new("put_result").with("rc", -1).with("msg", why),
        }
    }

    fn get(&self, msg: &Message) -> Message {
        let found = self.check_kvs(msg).and_then(|()| {
            let key = msg.get("key").ok_or("get_needs_a_key")?;
            self.kvs.get(key).ok_or_else(|| format!("key_{key}_not_found"))
        });
        match found {
            Ok(v) => Message::new("get_result").with("rc", 0).with("msg", "success").with("value", v),
            Err(why) => Message::new("get_result").with("rc", -1).with("msg", why),
        }
    }
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

    #[test]
    fn abort_carries_the_exit_code() {
        assert_eq!(server(2).handle(1, &Message::new("abort").with("exitcode", 7)), Outcome::Abort(7));
    }
}

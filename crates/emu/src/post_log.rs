//! The post log: `AAR_EMU_LOG=<path>` → JSON Lines, one [`Record`] per call that puts traffic on
//! the network or changes routing (SMSG's, DMAPP's attributes) (the format is documented in the
//! crate root). Each line is
//! one `write(2)` on an `O_APPEND` file, so lines are complete at any exit (no buffer to flush)
//! and processes sharing the file do not interleave; only a SIGKILL that lands in the write can
//! cut the last line, where the kernel stops the write: at a page boundary of the file. Without the variable nothing is opened and
//! nothing is formatted.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

use aar_abi::dmapp::{DmappPe, DmappReturn, DmappType};
use aar_abi::GniReturn;
use serde::Serialize;

use crate::settings::{self, SettingError};

static LOG: OnceLock<Option<Mutex<Log>>> = OnceLock::new();

/// The open log, its path for messages, and whether a failed write was reported already.
struct Log {
    file: File,
    path: OsString,
    write_failed: bool,
}

/// This process's rank in an `aar run` job, once it has joined one: the ranks of a job share
/// one log, and each line says whose it is.
static RANK: OnceLock<u32> = OnceLock::new();

/// From now on every line carries `"rank": rank`.
pub fn set_rank(rank: u32) {
    let _ = RANK.set(rank);
}

fn log_file() -> Option<&'static Mutex<Log>> {
    LOG.get_or_init(|| {
        let path = settings::log_path()?;
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => Some(Mutex::new(Log { file, path, write_failed: false })),
            Err(source) => {
                SettingError::Log { path, source }.report();
                None
            }
        }
    })
    .as_ref()
}

/// True when a log is open; callers skip building the record otherwise.
pub fn enabled() -> bool {
    log_file().is_some()
}

/// One line of the log. Fields are written in the order declared; `None` is `null`, except for
/// the chain fields, which only chained posts have.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Record {
    /// GNI_PostRdma, GNI_PostFma, GNI_PostCqWrite, GNI_CtPostFma, GNI_CtPostCqWrite: the head
    /// descriptor's fields as received (`None` for a NULL descriptor).
    Post {
        call: &'static str,
        #[serde(rename = "type")]
        post_type: Option<u32>,
        length: Option<u64>,
        dlvr_mode: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        chain_elements: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        chain_bytes: Option<u64>,
        rc: GniReturn,
    },
    /// GNI_SmsgSend, GNI_SmsgSendWTag: header + data bytes, the SMSG mode of the sending NIC and
    /// its address (`None` for an unknown endpoint).
    SmsgSend { call: &'static str, length: u64, smsg_dlvr_mode: Option<u16>, nic: Option<u32>, rc: GniReturn },
    /// GNI_SmsgSetDeliveryMode (`nic` is `None` for an unknown handle).
    SmsgSetDeliveryMode { call: &'static str, nic: Option<u32>, dlvr_mode: u16, rc: GniReturn },
    /// A DMAPP data call: what it moves (`kind` PUT, GET or AMO, `bytes` per message, one message
    /// per PE of `pes`) and the routing value in force for it on the calling `thread` (`None`
    /// before dmapp_init; `pes` is `None` for a NULL PE list, `bytes` for an unknown type).
    DmappData {
        call: &'static str,
        kind: &'static str,
        pes: Option<Vec<DmappPe>>,
        nelems: u64,
        #[serde(rename = "type")]
        ty: DmappType,
        bytes: Option<u64>,
        messages: u64,
        routing: Option<u8>,
        routing_name: Option<&'static str>,
        thread: i32,
        rc: DmappReturn,
    },
    /// `dmapp_init[_ext]`, `dmapp_set_rma_attrs[_ext]`: the routing values asked for (`None`: no
    /// attributes given).
    DmappAttrs { call: &'static str, thread: i32, put_routing: Option<u8>, get_routing: Option<u8>, rc: DmappReturn },
}

/// A line: the record, then the rank in a job.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    record: &'a Record,
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<u32>,
}

/// Appends `record` as one line.
pub fn record(record: &Record) {
    let Some(file) = log_file() else { return };
    let Ok(mut line) = serde_json::to_vec(&Line { record, rank: RANK.get().copied() }) else { return };
    line.push(b'\n');
    let mut log = file.lock().unwrap_or_else(|e| e.into_inner());
    // A write that starts at the file size limit (`ulimit -f`) raises SIGXFSZ, which kills the
    // process: a line that would pass the limit is refused here instead (EFBIG), as the rank's
    // file is (`settings::file_size_limit`). Ranks appending to one log can still race past it.
    let fits = settings::file_size_limit()
        .is_none_or(|limit| log.file.metadata().is_ok_and(|m| m.len().saturating_add(line.len() as u64) <= limit));
    let written = if fits { log.file.write_all(&line) } else { Err(std::io::Error::from_raw_os_error(libc::EFBIG)) };
    if let Err(source) = written {
        // Once: a full disk would otherwise say it at every post.
        if !std::mem::replace(&mut log.write_failed, true) {
            SettingError::LogWrite { path: log.path.clone(), source }.report();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_the_documented_field_order() {
        let post = Record::Post {
            call: "GNI_CtPostFma",
            post_type: Some(3),
            length: Some(32),
            dlvr_mode: Some(64),
            chain_elements: Some(2),
            chain_bytes: Some(210),
            rc: 0,
        };
        let want = r#"{"call":"GNI_CtPostFma","type":3,"length":32,"dlvr_mode":64,"chain_elements":2,"chain_bytes":210,"rc":0}"#;
        assert_eq!(serde_json::to_string(&post).unwrap(), want);
        let null = Record::Post {
            call: "GNI_PostFma",
            post_type: None,
            length: None,
            dlvr_mode: None,
            chain_elements: None,
            chain_bytes: None,
            rc: 2,
        };
        let want = r#"{"call":"GNI_PostFma","type":null,"length":null,"dlvr_mode":null,"rc":2}"#;
        assert_eq!(serde_json::to_string(&null).unwrap(), want);
        let smsg = Record::SmsgSend { call: "GNI_SmsgSend", length: 48, smsg_dlvr_mode: None, nic: Some(256), rc: 0 };
        let want = r#"{"call":"GNI_SmsgSend","length":48,"smsg_dlvr_mode":null,"nic":256,"rc":0}"#;
        assert_eq!(serde_json::to_string(&smsg).unwrap(), want);
        let mode = Record::SmsgSetDeliveryMode { call: "GNI_SmsgSetDeliveryMode", nic: None, dlvr_mode: 128, rc: 2 };
        let want = r#"{"call":"GNI_SmsgSetDeliveryMode","nic":null,"dlvr_mode":128,"rc":2}"#;
        assert_eq!(serde_json::to_string(&mode).unwrap(), want);
        let data = Record::DmappData {
            call: "dmapp_put_ixpe_nbi",
            kind: "PUT",
            pes: Some(vec![1, 3]),
            nelems: 8,
            ty: 1,
            bytes: Some(64),
            messages: 2,
            routing: Some(6),
            routing_name: Some("ADAPTIVE_3"),
            thread: 77,
            rc: 0,
        };
        let want = r#"{"call":"dmapp_put_ixpe_nbi","kind":"PUT","pes":[1,3],"nelems":8,"type":1,"bytes":64,"messages":2,"routing":6,"routing_name":"ADAPTIVE_3","thread":77,"rc":0}"#;
        assert_eq!(serde_json::to_string(&data).unwrap(), want);
        let set = Record::DmappAttrs {
            call: "dmapp_set_rma_attrs_ext",
            thread: 77,
            put_routing: Some(9),
            get_routing: None,
            rc: 1,
        };
        let want = r#"{"call":"dmapp_set_rma_attrs_ext","thread":77,"put_routing":9,"get_routing":null,"rc":1}"#;
        assert_eq!(serde_json::to_string(&set).unwrap(), want);
        let line = Line { record: &mode, rank: None };
        let want = r#"{"call":"GNI_SmsgSetDeliveryMode","nic":null,"dlvr_mode":128,"rc":2}"#;
        assert_eq!(serde_json::to_string(&line).unwrap(), want);
        let line = Line { record: &mode, rank: Some(3) };
        let want = r#"{"call":"GNI_SmsgSetDeliveryMode","nic":null,"dlvr_mode":128,"rc":2,"rank":3}"#;
        assert_eq!(serde_json::to_string(&line).unwrap(), want);
    }
}

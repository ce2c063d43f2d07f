//! The process's place in its job, from the launcher's environment: its rank, the number of
//! ranks, and the job and step it belongs to.

use std::sync::atomic::{AtomicI64, Ordering};

static RANK: AtomicI64 = AtomicI64::new(-1);

/// Variables launchers set to the rank of the process, in the order they are trusted.
const RANK_VARIABLES: [&str; 5] = ["PMI_RANK", "SLURM_PROCID", "ALPS_APP_PE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"];

/// Variables launchers set to the number of ranks.
const SIZE_VARIABLES: [&str; 3] = ["PMI_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"];

/// Variables batch systems set to the job id, in the order they are trusted.
const JOB_VARIABLES: [&str; 5] = ["SLURM_JOB_ID", "PBS_JOBID", "COBALT_JOBID", "LSB_JOBID", "JOB_ID"];

/// Variables that tell the job step (Slurm's step, or the ALPS application id).
const STEP_VARIABLES: [&str; 2] = ["SLURM_STEP_ID", "ALPS_APP_ID"];

fn first_set(variables: &[&str]) -> Option<String> {
    variables.iter().find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
}

fn first_number(variables: &[&str]) -> Option<u32> {
    variables.iter().find_map(|v| std::env::var(v).ok().and_then(|s| s.trim().parse::<u32>().ok()))
}

/// Read the rank from the launcher's environment (once, at initialisation).
pub fn detect_rank() -> Option<u32> {
    let rank = first_number(&RANK_VARIABLES);
    RANK.store(rank.map_or(-1, i64::from), Ordering::Relaxed);
    rank
}

/// The rank [`detect_rank`] found.
pub fn rank() -> Option<u32> {
    u32::try_from(RANK.load(Ordering::Relaxed)).ok()
}

/// Rank 0, or a process launched without a rank (a serial program, a test).
pub fn is_rank0() -> bool {
    rank().is_none_or(|r| r == 0)
}

/// Ranks in the job, when the launcher says.
pub fn nranks() -> Option<u32> {
    first_number(&SIZE_VARIABLES)
}

/// The batch system's job id.
pub fn job_id() -> Option<String> {
    first_set(&JOB_VARIABLES)
}

/// The job step (Slurm's step id, or the ALPS application id), when the launcher sets one.
pub fn step() -> Option<String> {
    first_set(&STEP_VARIABLES)
}

/// What the ranks of one run (one job step) share, in their iteration records and their files'
/// names: the job and step id, or the job id alone; `None` without a job id.
pub fn experiment() -> Option<String> {
    let job = job_id()?;
    Some(match step() {
        Some(step) => format!("{job}.{step}"),
        None => job,
    })
}

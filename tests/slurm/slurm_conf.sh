# The slurm.conf lines both private test clusters share (sourced by
# tests/slurm/slurm_cluster.sh and tests/cluster/multihost_slurm.sh, which add
# their own controller, ports, slurmd folders and nodes):
#   slurm_conf_shared FOLDER CRED_EXPIRE_S >>slurm.conf
# munge through FOLDER's own socket; controller state, pid and log in FOLDER;
# no cgroups, accounting or mail (a container has none); the scheduler
# looking every 2 s and requeue on, so a test waits seconds, not minutes.
slurm_conf_shared() {
  local dir=$1 cred_expire=$2
  cat <<EOF
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=$cred_expire
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
# No cgroups in a container: track processes through /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=5
MinJobAge=600
InactiveLimit=0
EOF
}

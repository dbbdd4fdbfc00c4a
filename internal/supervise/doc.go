// Package supervise keeps a child process running as a kubelet keeps a
// container running: it starts the program with its output appended to a
// log file, starts it again with a growing pause whenever it exits, and
// stops it with SIGTERM and, after a grace period, SIGKILL to its whole
// process group. virt-local supervises the control plane's processes with
// it, and in split mode virtkit's daemons.
//
// A Process reports its PID, whether it runs and how often it was
// restarted, which is what a test that kills it needs to see it come back.
// Children are started from one spawn.Spawner thread with a parent-death
// signal, so that none outlives the supervising process.
package supervise

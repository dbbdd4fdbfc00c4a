// Package libvirtd runs a private libvirtd: one daemon per VM launcher (or per
// test), with its own configuration, sockets, state, logs and host UUID, in a
// private mount namespace so that it never sees or touches the host's libvirt.
//
// It owns the generated libvirtd.conf and qemu.conf (pure: [RenderLibvirtdConf]
// and [RenderQEMUConf]), the daemon process ([Start], [Daemon]), and the rule
// that stopping a daemon leaves no process of its namespace behind.
//
// It does not speak libvirt's RPC: callers connect to [Daemon.URI] with a
// libvirt client (virt/domain/libvirt). It never picks KVM or emulation; that is
// the domain document's choice. It builds with CGO_ENABLED=0.
//
// Layout of an instance folder Dir (host paths; inside the daemon's namespace
// they are bound over libvirt's fixed system paths):
//
//	Dir/etc    -> /etc/libvirt        libvirtd.conf, qemu.conf
//	Dir/run    -> /run/libvirt        libvirt-sock, libvirt-sock-ro, qemu/ pid files
//	Dir/lib    -> /var/lib/libvirt    qemu/ monitor sockets and domain state
//	Dir/log    -> /var/log/libvirt    libvirtd.log, qemu/NAME.log
//	Dir/cache  -> /var/cache/libvirt  QEMU capability probes (shareable, see Config.CacheDir)
//
// A session daemon (Config.Session, for a caller that is not root) has no
// namespace; libvirt finds its folders through the XDG variables, and the
// configuration names host paths:
//
//	Dir/etc    XDG_CONFIG_HOME  libvirtd.conf; libvirt/qemu.conf; libvirt/qemu/ domains and lib/ state
//	Dir/run    XDG_RUNTIME_DIR  libvirt-sock (unix_sock_dir), libvirt/qemu/run/ pid files and monitors
//	Dir/log                     libvirtd.log
//	Dir/cache  XDG_CACHE_HOME   libvirt/qemu/log/NAME.log; libvirt/qemu/cache (a link to Config.CacheDir)
//
// Config.ConfigDir, when set, takes Dir/etc's place: a short path, where
// Dir is too deep for the sockets libvirt makes below its configuration.
// XDG_RUNTIME_DIR is then ConfigDir/run (Paths.Runtime), for the sockets
// libvirt makes there (a vTPM's, libvirt/qemu/run/swtpm/ID-NAME-swtpm.sock);
// the daemon's own socket stays in Dir/run.
package libvirtd

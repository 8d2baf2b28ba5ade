// Package buildinfo reports what binary is running.
package buildinfo

import "runtime/debug"

// Version is set at link time (-ldflags "-X …/buildinfo.Version=v1.2.3");
// otherwise Get falls back to the VCS data Go embeds.
var Version = ""

// Info describes the running binary.
type Info struct {
	Version   string
	Revision  string
	Modified  bool
	GoVersion string
}

// Get returns the build information.
func Get() Info {
	info := Info{Version: Version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}

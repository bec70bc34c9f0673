// Package grantwire carries authored grant layers over the plugin
// protocol. A plugin that judges (confine, audit) receives the layers exactly
// as written and compiles them with core/grant, the one verdict function, so
// the core and every plugin read one table.
package grantwire

import (
	"github.com/warden-run/warden/core/grant"
	pb "github.com/warden-run/warden/core/proto/wardenplugin/v1"
)

// ToProto turns an authored grant layer into its wire form.
func ToProto(l grant.Layer, egress []grant.Spec) *pb.GrantLayer {
	keys := func(s []grant.Spec) []*pb.GrantKey {
		out := make([]*pb.GrantKey, 0, len(s))
		for _, k := range s {
			out = append(out, &pb.GrantKey{Text: k.Text, Pos: &pb.Pos{File: k.Pos.File, Line: int32(k.Pos.Line), Col: int32(k.Pos.Col)}})
		}
		return out
	}
	g := &pb.GrantLayer{
		Name: l.Name, Pos: &pb.Pos{File: l.Pos.File, Line: int32(l.Pos.Line), Col: int32(l.Pos.Col)},
		ExecAllow: keys(l.Exec.Allow), ExecDeny: keys(l.Exec.Deny),
		Read: keys(l.File.Read), Write: keys(l.File.Write), SystemPaths: keys(l.File.SystemPaths),
		Egress: keys(egress),
	}
	for _, o := range l.Exec.Only {
		g.ExecOnly = append(g.ExecOnly, &pb.OnlyKey{Key: keys([]grant.Spec{o.Key})[0], Args: o.Args})
	}
	return g
}

// FromProto is ToProto's inverse, for plugins that judge.
func FromProto(g *pb.GrantLayer) grant.Layer {
	pos := func(p *pb.Pos) grant.Pos {
		return grant.Pos{File: p.GetFile(), Line: int(p.GetLine()), Col: int(p.GetCol())}
	}
	keys := func(ks []*pb.GrantKey) []grant.Spec {
		out := make([]grant.Spec, 0, len(ks))
		for _, k := range ks {
			out = append(out, grant.Spec{Text: k.GetText(), Pos: pos(k.GetPos())})
		}
		return out
	}
	l := grant.Layer{Name: g.GetName(), Pos: pos(g.GetPos())}
	l.Exec.Allow, l.Exec.Deny = keys(g.GetExecAllow()), keys(g.GetExecDeny())
	l.File.Read, l.File.Write, l.File.SystemPaths = keys(g.GetRead()), keys(g.GetWrite()), keys(g.GetSystemPaths())
	for _, o := range g.GetExecOnly() {
		l.Exec.Only = append(l.Exec.Only, grant.OnlySpec{Key: keys([]*pb.GrantKey{o.GetKey()})[0], Args: o.GetArgs()})
	}
	return l
}

// Egress returns the egress keys of a wire layer.
func Egress(g *pb.GrantLayer) []grant.Spec {
	out := make([]grant.Spec, 0, len(g.GetEgress()))
	for _, k := range g.GetEgress() {
		p := k.GetPos()
		out = append(out, grant.Spec{Text: k.GetText(), Pos: grant.Pos{File: p.GetFile(), Line: int(p.GetLine()), Col: int(p.GetCol())}})
	}
	return out
}

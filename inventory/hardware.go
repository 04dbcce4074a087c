package inventory

import (
	"regexp"
	"strings"
)

// ScopeCPU is the hardware scope of a profile that needs no accelerator.
// Every host has a CPU, so a profile whose hardware lists cpu matches any
// slot, a GPU's too.
const ScopeCPU = "cpu"

// HardwareScopes maps the GPU names nvidia-smi prints to the scopes an
// inventory's `hardware:` lists: the one table of them (docs/gpu.md). The
// first pattern that matches decides, so more specific names come first
// (GH200 before H200, GB300 before B300, L40S before L40 before L4).
var HardwareScopes = []struct {
	Scope   string
	Pattern *regexp.Regexp
	Example string
}{
	{"gb300", regexp.MustCompile(`(?i)\bGB300\b`), "NVIDIA GB300"},
	{"gb200", regexp.MustCompile(`(?i)\bGB200\b`), "NVIDIA GB200"},
	{"b300", regexp.MustCompile(`(?i)\bB300\b`), "NVIDIA B300 SXM6 AC"},
	{"b200", regexp.MustCompile(`(?i)\bB200\b`), "NVIDIA B200"},
	{"gh200", regexp.MustCompile(`(?i)\bGH200\b`), "NVIDIA GH200 480GB"},
	{"h200", regexp.MustCompile(`(?i)\bH200\b`), "NVIDIA H200, NVIDIA H200 NVL"},
	{"h100", regexp.MustCompile(`(?i)\bH100\b`), "NVIDIA H100 80GB HBM3"},
	{"h20", regexp.MustCompile(`(?i)\bH20\b`), "NVIDIA H20"},
	{"a100", regexp.MustCompile(`(?i)\bA100\b`), "NVIDIA A100-SXM4-80GB"},
	{"l40s", regexp.MustCompile(`(?i)\bL40S\b`), "NVIDIA L40S"},
	{"l40", regexp.MustCompile(`(?i)\bL40\b`), "NVIDIA L40"},
	{"l4", regexp.MustCompile(`(?i)\bL4\b`), "NVIDIA L4"},
	{"rtx-pro-6000", regexp.MustCompile(`(?i)\bRTX PRO 6000\b`), "NVIDIA RTX PRO 6000 Blackwell Server Edition"},
	{"a10g", regexp.MustCompile(`(?i)\bA10G\b`), "NVIDIA A10G"},
	{"jetson-thor", regexp.MustCompile(`(?i)\bThor\b`), "NVIDIA Jetson AGX Thor"},
	{"jetson-orin", regexp.MustCompile(`(?i)\bOrin\b`), "Orin (nvgpu)"},
}

// ScopeOfGPU is the hardware scope of an nvidia-smi GPU name, or "" when
// the table does not know the name.
func ScopeOfGPU(name string) string {
	for _, s := range HardwareScopes {
		if s.Pattern.MatchString(name) {
			return s.Scope
		}
	}
	return ""
}

// KnownScope reports whether a `hardware:` entry names a scope of the table
// or cpu.
func KnownScope(scope string) bool {
	if scope == ScopeCPU {
		return true
	}
	for _, s := range HardwareScopes {
		if s.Scope == scope {
			return true
		}
	}
	return false
}

// ScopeNames lists every known scope, cpu first.
func ScopeNames() []string {
	out := []string{ScopeCPU}
	for _, s := range HardwareScopes {
		out = append(out, s.Scope)
	}
	return out
}

// RunsOn reports whether the profile's hardware scope admits a GPU (or,
// with scope cpu, a CPU slot). A profile that names no hardware admits
// everything: it makes no claim to check.
func (p *Profile) RunsOn(scope string) bool {
	if len(p.Hardware) == 0 {
		return true
	}
	for _, h := range p.Hardware {
		if strings.EqualFold(h, scope) || h == ScopeCPU {
			return true
		}
	}
	return false
}

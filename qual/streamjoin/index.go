package streamjoin

import (
	"encoding/binary"
	"hash/maphash"
	"math"

	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// reqKey identifies a request id in 16 bytes: a canonical lowercase UUID
// (what AIPerf sends as X-Request-ID) is stored exactly; any other id is
// stored as a 128-bit hash of its bytes (a collision is a 2^-128 event).
type reqKey [16]byte

// hasher holds the seeds of one join's hashes.
type hasher struct {
	a, b maphash.Seed
}

func newHasher() hasher { return hasher{a: maphash.MakeSeed(), b: maphash.MakeSeed()} }

func (h hasher) key(id []byte) reqKey {
	var k reqKey
	if parseUUID(&k, id) {
		return k
	}
	binary.LittleEndian.PutUint64(k[:8], maphash.Bytes(h.a, id))
	binary.LittleEndian.PutUint64(k[8:], maphash.Bytes(h.b, id))
	return k
}

// sum128 is a 128-bit keyed hash (two maphash seeds, random per join) of
// a byte string: canonical answers compare by it, so the index does not
// grow with answer sizes, and the memo of extractions is keyed by it.
func (h hasher) sum128(b []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(h.a, b), maphash.Bytes(h.b, b)}
}

// hexNibble maps lowercase hex digits to their value and anything else
// to 0xff.
var hexNibble = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
	}
	return t
}()

// uuidHex are the offsets of the 16 hex pairs in a canonical UUID.
var uuidHex = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

func parseUUID(k *reqKey, s []byte) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	var bad byte
	for j, at := range uuidHex {
		hi, lo := hexNibble[s[at]], hexNibble[s[at+1]]
		bad |= hi | lo
		k[j] = hi<<4 | lo&0x0f
	}
	return bad&0xf0 == 0
}

// Phases of the index.
const (
	phaseNone uint8 = iota
	phaseWarmup
	phaseMeasured
)

// entry flags.
const (
	fClient         uint16 = 1 << iota // a client record claims this id
	fFailed                            // the client reported an error or a cancel
	fRawSeen                           // the raw export had a line for it
	fNatFailed                         // the first native answer is an error line
	fNatBad                            // the first native answer does not extract
	fMismatch                          // HTTP and native answers differ
	fSrvOff                            // natOff is the offset of the first server record line
	fInconsistent                      // records and raw disagree on phase or conversation
	fConvDup                           // an earlier request used the same dataset line
	fTokensDisagree                    // the server's record and the HTTP answer count different completion tokens
	// fNatTask: taskMS holds the native answer's task_ms while the Task
	// source is the server's records (until the first record replaces it).
	fNatTask
	fTaskDomain   // a Task time of this request is outside its domain (its note says which)
	fTaskCompared // the server's and the native Task times were both there and compared
	fTaskDisagree // ... and differ by more than the stated tolerance
	fBusy         // the server refused it 429 server_busy (an overlap)
	// fForeign: another trial's client records claim this id (Files.Foreign):
	// its server record and native answer are that trial's, neither this
	// trial's nor unclaimed.
	fForeign
)

// HTTP answer outcomes (entry.ans).
const (
	ansOK uint8 = iota
	ansBad
	ansMeaningless
	// ansTooLarge: the answer is over fileio.MaxAnswerBytes; it is not
	// extracted, and the request is an error.
	ansTooLarge
	// ansWrongModel: the answer names another model than the one served.
	ansWrongModel
)

// entry is everything the join keeps per request id: 128 bytes, whatever
// the payload and answer sizes, plus an 8-byte slot in the id table.
type entry struct {
	key       reqKey
	startNs   int64
	taskMS    float64   // NaN: none (the first record of the family's Task time source)
	httpMS    float64   // NaN: none (the client's request_latency)
	natHash   [2]uint64 // hash of the first native answer's canonical form
	natOff    int64     // offset of the first native answer line (or, with fSrvOff, server record line); -1 none
	convHash  uint64    // the client's conversation_id
	natTokens uint32    // the first native answer's completion tokens (0: not counted)
	srvTokens uint32    // the first server record's completion_tokens (0: not counted)
	// httpTokens and httpBoxes are the HTTP answer's usage.completion_tokens
	// and boxes: the row's output size (the source of truth).
	httpTokens uint32
	httpBoxes  uint32
	imgW       int32
	imgH       int32
	status     int32 // HTTP status as the pipeline derives it
	session    int32 // the dataset line of the conversation; -1 none
	copies     uint8 // client records with this id (saturating)
	recs       uint8 // server records (saturating)
	nats       uint8 // native answers (saturating)
	raws       uint8 // raw export lines (saturating)
	phase      uint8
	ans        uint8
	flags      uint16
	// echo is what the client's HTTP trace shows of the server's
	// X-Request-ID echo (echoNone until a client record claims the id).
	echo uint8
	// sendMS, waitMS and recvMS split the HTTP exchange (NaN: no split);
	// float32 keeps the entry at 128 bytes (7 significant digits).
	sendMS, waitMS, recvMS float32
}

// Echo outcomes (entry.echo), aiperf.Echo's values.
const (
	echoNone uint8 = iota
	echoMatch
	echoNoTrace
	echoMissing
	echoDiffers
)

func echoCode(e aiperf.Echo) uint8 {
	switch e {
	case aiperf.EchoMatch:
		return echoMatch
	case aiperf.EchoNoTrace:
		return echoNoTrace
	case aiperf.EchoMissing:
		return echoMissing
	}
	return echoDiffers
}

// echoName is the joined line's echo value.
func echoName(c uint8) string {
	switch c {
	case echoMatch:
		return verdict.EchoMatch
	case echoNoTrace:
		return verdict.EchoNoTrace
	case echoMissing:
		return verdict.EchoMissing
	case echoDiffers:
		return verdict.EchoDiffers
	}
	return ""
}

func bump8(p *uint8) {
	if *p < math.MaxUint8 {
		*p++
	}
}

// pageBits sizes the index pages: entries live in fixed pages, so growing
// never copies the ones already stored.
const pageBits = 12

// index maps request ids to entries with an open-addressing table
// (linear probing; ids are random, so their first bytes are the hash).
// Each slot holds the entry number and a 32-bit tag of the id's hash, so a
// probe that passes another id's slot rejects it by the tag without
// loading that entry: at a million requests the entries are 112 MB, and
// every entry loaded at random is a cache miss.
type index struct {
	slots []uint64 // entry number + 1 in the low 32 bits (0: empty), the tag in the high 32
	mask  uint64
	pages []*[1 << pageBits]entry
	n     uint32
	sink  uint64 // touchLines's loads end here, so that they are not dropped
}

func newIndex(hint int) *index {
	size := 1 << 16
	for size*3/4 < hint {
		size <<= 1
	}
	return &index{slots: make([]uint64, size), mask: uint64(size - 1)}
}

func (x *index) at(i uint32) *entry {
	return &x.pages[i>>pageBits][i&(1<<pageBits-1)]
}

func slotHash(k *reqKey) uint64 {
	h := binary.LittleEndian.Uint64(k[:8]) ^ binary.LittleEndian.Uint64(k[8:])*0x9e3779b97f4a7c15
	return h ^ h>>29
}

// slotTag is the tag of a hash in a slot's high bits (the table's index
// uses the low bits).
func slotTag(h uint64) uint64 { return h &^ (1<<32 - 1) }

// find returns the entry of k, or the free slot where it would go.
func (x *index) find(k *reqKey) (*entry, uint64) {
	h := slotHash(k)
	tag := slotTag(h)
	for i := h & x.mask; ; i = (i + 1) & x.mask {
		s := x.slots[i]
		if s == 0 {
			return nil, i
		}
		if slotTag(s) != tag {
			continue
		}
		if e := x.at(uint32(s) - 1); e.key == *k {
			return e, i
		}
	}
}

// get returns the entry of k, creating it when absent.
func (x *index) get(k reqKey) *entry {
	e, slot := x.find(&k)
	if e != nil {
		return e
	}
	if uint64(x.n+1) > uint64(len(x.slots))*3/4 {
		x.grow()
		_, slot = x.find(&k)
	}
	i := x.n
	if int(i>>pageBits) == len(x.pages) {
		x.pages = append(x.pages, new([1 << pageBits]entry))
	}
	x.n++
	x.slots[slot] = uint64(i+1) | slotTag(slotHash(&k))
	e = x.at(i)
	e.key = k
	e.taskMS, e.httpMS, e.natOff, e.session = math.NaN(), math.NaN(), -1, -1
	nan := float32(math.NaN())
	e.sendMS, e.waitMS, e.recvMS = nan, nan, nan
	return e
}

func (x *index) grow() {
	x.slots = make([]uint64, 2*len(x.slots))
	x.mask = uint64(len(x.slots) - 1)
	for i := uint32(0); i < x.n; i++ {
		k := &x.at(i).key
		_, slot := x.find(k)
		x.slots[slot] = uint64(i+1) | slotTag(slotHash(k))
	}
}

// lookup returns the entry of k, or nil.
func (x *index) lookup(k reqKey) *entry {
	e, _ := x.find(&k)
	return e
}

// keyed is a parsed line that names a request id.
type keyed interface{ lineKey() *reqKey }

func (v *serverLine) lineKey() *reqKey { return &v.key }
func (v *nativeLine) lineKey() *reqKey { return &v.key }
func (v *clientLine) lineKey() *reqKey { return &v.key }
func (v *rawLine) lineKey() *reqKey    { return &v.key }

// touchLines is a linePrefetcher: it loads the slots, then the entries, of
// a chunk's ids before the merge looks them up one at a time. These loads
// do not depend on each other, so the CPU overlaps their cache misses,
// where the merge waits for each in turn (at a million requests the slots
// are 16 MiB and the entries 112 MB, each met at random). It changes
// nothing in the index.
func touchLines[T any, P interface {
	*T
	keyed
}](x *index) linePrefetcher[T] {
	return func(lines []T) {
		var sink uint64
		for i := range lines {
			sink += x.slots[slotHash(P(&lines[i]).lineKey())&x.mask]
		}
		for i := range lines {
			h := slotHash(P(&lines[i]).lineKey())
			if s := x.slots[h&x.mask]; s != 0 && slotTag(s) == slotTag(h) {
				e := x.at(uint32(s) - 1)
				sink += uint64(e.key[0]) + uint64(e.flags)
			}
		}
		x.sink = sink
	}
}

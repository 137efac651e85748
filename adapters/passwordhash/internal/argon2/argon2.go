// Copyright 2017 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package argon2 is golang.org/x/crypto/argon2 v0.58.0's Argon2id (its
// files argon2.go, blake2b.go and blamka_*, BSD-licensed: LICENSE), changed
// in two respects: the memory of a derivation is taken from a Pool, a free
// list, and given back after it, instead of 19 MiB (at userd's cost) made
// per call and left to the garbage collector; and that memory is mapped
// outside the Go heap where the system allows (arena). userd hashes on
// every login; with the upstream package each hash was 19 MiB of garbage
// that kept the heap and the RSS near the soft memory limit and made the
// kernel fault and zero fresh pages for the next hash (see
// adapters/passwordhash and docs/performance.md for the measurements). A
// reused buffer holds the previous derivation's blocks, so the first pass
// writes each block with processBlock instead of upstream's
// processBlockXOR into zeroed memory (Argon2 v1.3 XORs only from the
// second pass on: RFC 9106, section 3.2).
// The tests check every output against x/crypto's on random inputs and
// parameters, with dirty buffers, and against RFC 9106's test vector.
package argon2

import (
	"encoding/binary"
	"sync"
	"time"

	"golang.org/x/crypto/blake2b"
)

// Version is the Argon2 version this package implements.
const Version = 0x13

const (
	argon2d = iota
	argon2i
	argon2id
)

// Pool is a free list of derivation memory, for derivations up to a
// given memory cost. It is safe for concurrent use.
type Pool struct {
	free chan arena
	// maxBlocks is the largest memory, in 1 KiB blocks, that the pool
	// keeps: a derivation of a larger cost (a stored hash made elsewhere)
	// allocates its memory and drops it after, so that the memory held
	// between derivations never exceeds what the configured cost needs.
	maxBlocks uint32

	// idle, when set, is how long the free list may sit unused before
	// its memory is dropped (ReleaseWhenIdle); trim is its timer, reset
	// by every give, and released runs after each drop.
	mu       sync.Mutex
	idle     time.Duration
	trim     *time.Timer
	released func()
}

// ReleaseWhenIdle makes the pool drop the memory it keeps once no
// derivation has given any back for d, then call released (which may
// hand the memory back to the operating system). A server keeps its
// hash memory through a burst of logins and gives it up once they stop.
// It is called before the pool is used.
func (p *Pool) ReleaseWhenIdle(d time.Duration, released func()) {
	p.idle, p.released = d, released
}

// Release drops the memory the free list keeps, and reports whether it
// kept any; a derivation running now keeps its own until it ends.
func (p *Pool) Release() bool {
	dropped := false
	for {
		select {
		case a := <-p.free:
			a.drop()
			dropped = true
		default:
			return dropped
		}
	}
}

// armRelease (re)starts the idle timer after a give.
func (p *Pool) armRelease() {
	if p.idle <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trim == nil {
		p.trim = time.AfterFunc(p.idle, p.releaseIdle)
		return
	}
	p.trim.Reset(p.idle)
}

// releaseIdle is the idle timer's work.
func (p *Pool) releaseIdle() {
	if p.Release() && p.released != nil {
		p.released()
	}
}

// NewPool returns a Pool that keeps the memory of at most n derivations,
// each of at most maxMemory KiB: n is how many derivations may run at
// once, maxMemory the memory cost new hashes are made with.
func NewPool(n int, maxMemory uint32) *Pool {
	return &Pool{free: make(chan arena, max(n, 1)), maxBlocks: maxMemory}
}

// IDKey derives a key from the password, salt, and cost parameters using
// Argon2id returning a byte slice of length keyLen that can be used as
// cryptographic key. The CPU cost and parallelism degree must be greater than
// zero.
//
// The time parameter specifies the number of passes over the memory and the
// memory parameter specifies the size of the memory in KiB. For example
// memory=2*1024*1024 sets the memory cost to ~2 GiB. The number of threads can
// be adjusted to the numbers of available CPUs. Remember to get a good random
// salt.
func (p *Pool) IDKey(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	return p.deriveKey(argon2id, password, salt, nil, nil, time, memory, threads, keyLen)
}

func (p *Pool) deriveKey(mode int, password, salt, secret, data []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	if time < 1 {
		panic("argon2: number of rounds too small")
	}
	if threads < 1 {
		panic("argon2: parallelism degree too low")
	}
	h0 := initHash(password, salt, secret, data, time, memory, uint32(threads), keyLen, mode)

	memory = memory / (syncPoints * uint32(threads)) * (syncPoints * uint32(threads))
	if memory < 2*syncPoints*uint32(threads) {
		memory = 2 * syncPoints * uint32(threads)
	}
	a := p.take(memory)
	defer p.give(a)
	B := a.blocks[:memory]
	initBlocks(B, &h0, memory, uint32(threads))
	processBlocks(B, time, memory, uint32(threads), mode)
	return extractKey(B, memory, uint32(threads), keyLen)
}

const (
	blockLength = 128
	syncPoints  = 4
)

type block [blockLength]uint64

func initHash(password, salt, key, data []byte, time, memory, threads, keyLen uint32, mode int) [blake2b.Size + 8]byte {
	var (
		h0     [blake2b.Size + 8]byte
		params [24]byte
		tmp    [4]byte
	)

	b2, _ := blake2b.New512(nil)
	binary.LittleEndian.PutUint32(params[0:4], threads)
	binary.LittleEndian.PutUint32(params[4:8], keyLen)
	binary.LittleEndian.PutUint32(params[8:12], memory)
	binary.LittleEndian.PutUint32(params[12:16], time)
	binary.LittleEndian.PutUint32(params[16:20], uint32(Version))
	binary.LittleEndian.PutUint32(params[20:24], uint32(mode))
	b2.Write(params[:])
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(password)))
	b2.Write(tmp[:])
	b2.Write(password)
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(salt)))
	b2.Write(tmp[:])
	b2.Write(salt)
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(key)))
	b2.Write(tmp[:])
	b2.Write(key)
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(data)))
	b2.Write(tmp[:])
	b2.Write(data)
	b2.Sum(h0[:0])
	return h0
}

func initBlocks(B []block, h0 *[blake2b.Size + 8]byte, memory, threads uint32) {
	var block0 [1024]byte
	for lane := uint32(0); lane < threads; lane++ {
		j := lane * (memory / threads)
		binary.LittleEndian.PutUint32(h0[blake2b.Size+4:], lane)

		binary.LittleEndian.PutUint32(h0[blake2b.Size:], 0)
		blake2bHash(block0[:], h0[:])
		for i := range B[j+0] {
			B[j+0][i] = binary.LittleEndian.Uint64(block0[i*8:])
		}

		binary.LittleEndian.PutUint32(h0[blake2b.Size:], 1)
		blake2bHash(block0[:], h0[:])
		for i := range B[j+1] {
			B[j+1][i] = binary.LittleEndian.Uint64(block0[i*8:])
		}
	}
}

func processBlocks(B []block, time, memory, threads uint32, mode int) {
	lanes := memory / threads
	segments := lanes / syncPoints

	processSegment := func(n, slice, lane uint32, wg *sync.WaitGroup) {
		var addresses, in, zero block
		if mode == argon2i || (mode == argon2id && n == 0 && slice < syncPoints/2) {
			in[0] = uint64(n)
			in[1] = uint64(lane)
			in[2] = uint64(slice)
			in[3] = uint64(memory)
			in[4] = uint64(time)
			in[5] = uint64(mode)
		}

		index := uint32(0)
		if n == 0 && slice == 0 {
			index = 2 // we have already generated the first two blocks
			if mode == argon2i || mode == argon2id {
				in[6]++
				processBlock(&addresses, &in, &zero)
				processBlock(&addresses, &addresses, &zero)
			}
		}

		offset := lane*lanes + slice*segments + index
		var random uint64
		for index < segments {
			prev := offset - 1
			if index == 0 && slice == 0 {
				prev += lanes // last block in lane
			}
			if mode == argon2i || (mode == argon2id && n == 0 && slice < syncPoints/2) {
				if index%blockLength == 0 {
					in[6]++
					processBlock(&addresses, &in, &zero)
					processBlock(&addresses, &addresses, &zero)
				}
				random = addresses[index%blockLength]
			} else {
				random = B[prev][0]
			}
			newOffset := indexAlpha(random, lanes, segments, threads, n, slice, lane, index)
			if n == 0 {
				// B may hold a previous derivation's blocks: see the
				// package comment.
				processBlock(&B[offset], &B[prev], &B[newOffset])
			} else {
				processBlockXOR(&B[offset], &B[prev], &B[newOffset])
			}
			index, offset = index+1, offset+1
		}
		wg.Done()
	}

	for n := uint32(0); n < time; n++ {
		for slice := uint32(0); slice < syncPoints; slice++ {
			var wg sync.WaitGroup
			for lane := uint32(0); lane < threads; lane++ {
				wg.Add(1)
				go processSegment(n, slice, lane, &wg)
			}
			wg.Wait()
		}
	}

}

func extractKey(B []block, memory, threads, keyLen uint32) []byte {
	lanes := memory / threads
	for lane := uint32(0); lane < threads-1; lane++ {
		for i, v := range B[(lane*lanes)+lanes-1] {
			B[memory-1][i] ^= v
		}
	}

	var block [1024]byte
	for i, v := range B[memory-1] {
		binary.LittleEndian.PutUint64(block[i*8:], v)
	}
	key := make([]byte, keyLen)
	blake2bHash(key, block[:])
	return key
}

func indexAlpha(rand uint64, lanes, segments, threads, n, slice, lane, index uint32) uint32 {
	refLane := uint32(rand>>32) % threads
	if n == 0 && slice == 0 {
		refLane = lane
	}
	m, s := 3*segments, ((slice+1)%syncPoints)*segments
	if lane == refLane {
		m += index
	}
	if n == 0 {
		m, s = slice*segments, 0
		if slice == 0 || lane == refLane {
			m += index
		}
	}
	if index == 0 || lane == refLane {
		m--
	}
	return phi(rand, uint64(m), uint64(s), refLane, lanes)
}

func phi(rand, m, s uint64, lane, lanes uint32) uint32 {
	p := rand & 0xFFFFFFFF
	p = (p * p) >> 32
	p = (p * m) >> 32
	return lane*lanes + uint32((s+m-(p+1))%uint64(lanes))
}

// take returns the memory of one derivation of memory blocks, reused
// when a free one is large enough. Their contents are left as they are.
func (p *Pool) take(memory uint32) arena {
	if memory > p.maxBlocks {
		// Never kept (see give): taking a free one would only drop it.
		return newArena(memory)
	}
	for {
		select {
		case a := <-p.free:
			if uint32(len(a.blocks)) >= memory {
				return a
			}
			// Made for a smaller cost (a hash made elsewhere, being
			// checked): dropped.
			a.drop()
		default:
			return newArena(memory)
		}
	}
}

// give hands a back for the next derivation, or drops it when it is
// larger than the pool keeps or the free list is full.
func (p *Pool) give(a arena) {
	if uint32(len(a.blocks)) > p.maxBlocks {
		a.drop()
		return
	}
	select {
	case p.free <- a:
		p.armRelease()
	default:
		a.drop()
	}
}

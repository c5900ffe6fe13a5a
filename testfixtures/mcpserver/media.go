package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// tinyPNG returns a valid 1x1 opaque red PNG.
func tinyPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0xff, A: 0xff})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // cannot fail when writing to a bytes.Buffer
	}
	return b.Bytes()
}

// tinyWAV returns a valid 8 kHz mono 16-bit PCM WAV of 8 samples.
func tinyWAV() []byte {
	samples := []int16{0, 1000, 2000, 1000, 0, -1000, -2000, -1000}
	const (
		rate     = 8000
		channels = 1
		bits     = 16
		align    = channels * bits / 8
	)
	dataLen := uint32(len(samples) * align)
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) } // bytes.Buffer writes cannot fail
	b.WriteString("RIFF")
	le(36 + dataLen) // size of the rest of the file
	b.WriteString("WAVE")
	b.WriteString("fmt ")
	le(uint32(16)) // fmt chunk size
	le(uint16(1))  // PCM
	le(uint16(channels))
	le(uint32(rate))
	le(uint32(rate * align)) // byte rate
	le(uint16(align))
	le(uint16(bits))
	b.WriteString("data")
	le(dataLen)
	le(samples)
	return b.Bytes()
}

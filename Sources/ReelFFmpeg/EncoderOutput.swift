/// What an encoder's `receive()` gives: a packet, or why there is none (rule 5: expected
/// outcomes are values, not errors).
package enum EncoderOutput: Sendable {
    /// An encoded packet.
    case packet(EncodedPacket)
    /// The encoder needs more input before it gives another packet.
    case needsInput
    /// The encoder has given everything after ``finish()``: there will be no more packets.
    case endOfStream
}

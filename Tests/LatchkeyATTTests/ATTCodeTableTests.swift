import LatchkeyATT
import Testing

@Suite("ATT opcodes and error codes")
struct ATTCodeTableTests {
    @Test("bit 6 marks commands: Write Command and Signed Write Command")
    func commandFlag() {
        #expect(ATTOpcode.writeCommand.isCommand)
        #expect(ATTOpcode.signedWriteCommand.isCommand)
        #expect(ATTOpcode(rawValue: 0x53).isCommand)
        #expect(!ATTOpcode.writeRequest.isCommand)
        #expect(!ATTOpcode.handleValueConfirmation.isCommand)
    }

    @Test("each request names its response opcode; nothing else does")
    func responseOpcodes() {
        let pairs: [(ATTOpcode, ATTOpcode)] = [
            (.exchangeMTURequest, .exchangeMTUResponse), (.findInformationRequest, .findInformationResponse),
            (.findByTypeValueRequest, .findByTypeValueResponse), (.readByTypeRequest, .readByTypeResponse),
            (.readRequest, .readResponse), (.readBlobRequest, .readBlobResponse),
            (.readMultipleRequest, .readMultipleResponse), (.readByGroupTypeRequest, .readByGroupTypeResponse),
            (.writeRequest, .writeResponse), (.prepareWriteRequest, .prepareWriteResponse),
            (.executeWriteRequest, .executeWriteResponse),
        ]
        for (request, response) in pairs {
            #expect(request.isRequest)
            #expect(request.responseOpcode == response)
            #expect(response.isServerToClient)
        }
        #expect(ATTOpcode.writeCommand.responseOpcode == nil)
        #expect(ATTOpcode.handleValueIndication.responseOpcode == nil)
        #expect(ATTOpcode.handleValueIndication.isServerToClient)
        #expect(!ATTOpcode.handleValueConfirmation.isServerToClient)
    }

    @Test("error codes carry the spec's values, and application codes stay representable")
    func errorCodes() {
        #expect(ATTErrorCode.invalidHandle.rawValue == 0x01)
        #expect(ATTErrorCode.invalidPDU.rawValue == 0x04)
        #expect(ATTErrorCode.requestNotSupported.rawValue == 0x06)
        #expect(ATTErrorCode.prepareQueueFull.rawValue == 0x09)
        #expect(ATTErrorCode.insufficientEncryption.rawValue == 0x0F)
        #expect(ATTErrorCode.valueNotAllowed.rawValue == 0x13)
        #expect(ATTErrorCode.cccdImproperlyConfigured.rawValue == 0xFD)
        #expect(ATTErrorCode.application(0x80).isApplicationError)
        #expect(!ATTErrorCode.invalidHandle.isApplicationError)
        #expect(ATTErrorCode(rawValue: 0x9F).description == "Application Error 0x9f")
        #expect(ATTErrorCode.invalidOffset.description == "Invalid Offset")
        #expect(ATTErrorCode(rawValue: 0x60).description == "ATT error 0x60")
    }
}

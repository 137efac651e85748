package gormstore

// legacyFixtures are the rows of testdata/legacy-v1.db and
// testdata/legacy-v1.pg.sql, read from them once, before any migration, and
// the applied_at of their steps in schema_migrations. An upgrade must leave
// every row as it is here.
var legacyFixtures = map[string]legacyFixture{
	"sqlite": {
		migrated: []int64{1795436055483506, 1795436055484208, 1795436055484443, 1795436055484641, 1795436055484809},
		rows: fixtureRows{
			Users: []userRow{
				{ID: "6b042e1713b2bab0556eb317", Name: "Grace Hopper", Email: "grace@example.com", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$aOPBZJdBJvIMXX6QrIB0jg$EV4bnK5MT0P8uIQAKcMjD1d6hiogj9ABp2AJTDHbAdk", Profiles: "ROLE_CUSTOMER", CreatedMicros: 1795436055873938, UpdatedMicros: 1795436055873938},
				{ID: "6b042e1715d3b9db41bf0ac7", Name: "Fixture Admin", Email: "admin@example.com", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$JNej1D2cp4quhZ/6GBo5ew$KzVL2MoX3MSxd9WgGHvx86g7UwnK8Ok/QLfwYKVqmXU", Profiles: "ROLE_ADMIN", CreatedMicros: 1795436055578495, UpdatedMicros: 1795436055578495},
				{ID: "6b042e172be3c92f49a98cde", Name: "Ada Lovelace", Email: "ada@example.com", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$o7w+woZEmOXe/lBWTOps5w$jwhCQzXZYfhXwvjtbCeguLMu8tpSvIJnbg2vb2NQSpc", Profiles: "ROLE_CUSTOMER", CreatedMicros: 1795436055824263, UpdatedMicros: 1795436055824263},
				{ID: "6b042e178b47aa616b84dd17", Name: "Imported Ivy", Email: "ivy@example.com", PasswordHash: "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy", Profiles: "ROLE_CUSTOMER", CreatedMicros: 1795436055610846, UpdatedMicros: 1795436055610846},
			},
			Keys: []keyRow{
				{ID: "732184b7c0680f87", Purpose: "access-token", Algorithm: "EdDSA", Secret: unhex("302e020100300506032b65700422042014ced5b053e43ed29d87bc6fe342509e7319e4ce2ffd5df68897257bb4616b86"), CreatedMicros: 1795436056313931},
				{ID: "9750b4071f9a1715", Purpose: "access-token", Algorithm: "EdDSA", Secret: unhex("302e020100300506032b6570042204202bdef78a41ce2516fc12fca86f30d3c0ffdd070e6feb365ce895666c81260d9b"), CreatedMicros: 1795436055631297},
				{ID: "refresh-hmac-1", Purpose: "refresh-hmac", Algorithm: "HS256", Secret: unhex("919d6a85ddcbcecd06eb48046042a924e5482b20f9560b60b25fe69cf5c50a14"), CreatedMicros: 1795436055643875},
			},
			Families: []refreshFamilyRow{
				{ID: "056d1baacf2468f8303fee95579626b3", UserID: "6b042e1715d3b9db41bf0ac7", CreatedMicros: 1795436055901416, ExpiresMicros: 1803212055901416, RevokedMicros: nil},
				{ID: "1d41f16ef70296556b9bd2bae0e1b9d0", UserID: "6b042e1713b2bab0556eb317", CreatedMicros: 1795436056157992, ExpiresMicros: 1803212056157992, RevokedMicros: ptr[int64](1795436056210744)},
				{ID: "c784dad53715c78e42aa2837285bb5e8", UserID: "6b042e172be3c92f49a98cde", CreatedMicros: 1795436055939641, ExpiresMicros: 1803212055939641, RevokedMicros: nil},
			},
			Tokens: []refreshTokenRow{
				{Hash: "03659d58aa390b5fb0cb9bdca3dcf7f84eeb82edbe70955ea60c2b387784033d", FamilyID: "056d1baacf2468f8303fee95579626b3", UserID: "6b042e1715d3b9db41bf0ac7", IssuedMicros: 1795436055901416, ExpiresMicros: 1798028055901416, UsedMicros: nil, SuccessorHash: nil},
				{Hash: "9b58134bc2a34b9b54197c20c153aeb9cf0df74c012d2074c3fd37f74cda657a", FamilyID: "1d41f16ef70296556b9bd2bae0e1b9d0", UserID: "6b042e1713b2bab0556eb317", IssuedMicros: 1795436056157992, ExpiresMicros: 1798028056157992, UsedMicros: nil, SuccessorHash: nil},
				{Hash: "ce69f8333851248a922a4fc50f51c73953bf2578737def21a966c6126f892337", FamilyID: "c784dad53715c78e42aa2837285bb5e8", UserID: "6b042e172be3c92f49a98cde", IssuedMicros: 1795436056102559, ExpiresMicros: 1798028056102559, UsedMicros: nil, SuccessorHash: nil},
				{Hash: "e480fc2dc348e41468671168db793222f2a9910ae7a560a0f3e58d484e17dec0", FamilyID: "c784dad53715c78e42aa2837285bb5e8", UserID: "6b042e172be3c92f49a98cde", IssuedMicros: 1795436055939641, ExpiresMicros: 1798028055939641, UsedMicros: ptr[int64](1795436056014449), SuccessorHash: ptr("e6089b636770f89838cada14135ff28ce5f24fc283054df137e16d8915da1bf1")},
				{Hash: "e6089b636770f89838cada14135ff28ce5f24fc283054df137e16d8915da1bf1", FamilyID: "c784dad53715c78e42aa2837285bb5e8", UserID: "6b042e172be3c92f49a98cde", IssuedMicros: 1795436056014449, ExpiresMicros: 1798028056014449, UsedMicros: ptr[int64](1795436056102559), SuccessorHash: ptr("ce69f8333851248a922a4fc50f51c73953bf2578737def21a966c6126f892337")},
			},
			Attempts: []loginAttemptRow{
				{Email: "ivy@example.com", Failures: 1, LastFailureMicros: 1795436056289595},
			},
			Audit: []auditEventRow{
				{ID: "000660f0884f66ccbb49150234107cdd", OccurredMicros: 1795436055586508, Type: "user.created", ActorID: "", SubjectID: "6b042e1715d3b9db41bf0ac7", ClientIP: "", RequestID: "", Detail: "profiles=ROLE_ADMIN origin=operator"},
				{ID: "000660f0884fde572bc846169847873c", OccurredMicros: 1795436055617111, Type: "user.created", ActorID: "", SubjectID: "6b042e178b47aa616b84dd17", ClientIP: "", RequestID: "", Detail: "profiles=ROLE_CUSTOMER origin=import"},
				{ID: "000660f088530943be7c6a7b5f2e9007", OccurredMicros: 1795436055824707, Type: "user.created", ActorID: "", SubjectID: "6b042e172be3c92f49a98cde", ClientIP: "127.0.0.1", RequestID: "6e3d9673af9b437923577f583acfe2b1", Detail: "profiles=ROLE_CUSTOMER"},
				{ID: "000660f08853caa9ed009a048dfd8698", OccurredMicros: 1795436055874217, Type: "user.created", ActorID: "", SubjectID: "6b042e1713b2bab0556eb317", ClientIP: "127.0.0.1", RequestID: "026e18b8b59679744fb29f80fc6a87b6", Detail: "profiles=ROLE_CUSTOMER"},
				{ID: "000660f0885491ad251af30aaedb8eea", OccurredMicros: 1795436055925165, Type: "login.succeeded", ActorID: "6b042e1715d3b9db41bf0ac7", SubjectID: "6b042e1715d3b9db41bf0ac7", ClientIP: "127.0.0.1", RequestID: "8990038b9490a1f32450dc2bc00e8768", Detail: "via=login"},
				{ID: "000660f0885594222a844532fd2804e6", OccurredMicros: 1795436055991330, Type: "login.succeeded", ActorID: "6b042e172be3c92f49a98cde", SubjectID: "6b042e172be3c92f49a98cde", ClientIP: "127.0.0.1", RequestID: "b43f0bf7660418cd69106233a164595e", Detail: "via=login"},
				{ID: "000660f0885882d0371abff2a4d1906d", OccurredMicros: 1795436056183504, Type: "login.succeeded", ActorID: "6b042e1713b2bab0556eb317", SubjectID: "6b042e1713b2bab0556eb317", ClientIP: "127.0.0.1", RequestID: "89a18d3eeb5f3b41c7273cf31b73cf18", Detail: "via=login"},
				{ID: "000660f08858ee554dd63692c034763d", OccurredMicros: 1795436056211029, Type: "session.revoked", ActorID: "6b042e1713b2bab0556eb317", SubjectID: "6b042e1713b2bab0556eb317", ClientIP: "127.0.0.1", RequestID: "6f4039879d68e2aa0319f21f8d03072d", Detail: "reason=logout family=1d41f16ef70296556b9bd2bae0e1b9d0"},
				{ID: "000660f0885a237b9c94e8ed40aa6d7f", OccurredMicros: 1795436056290171, Type: "login.failed", ActorID: "", SubjectID: "6b042e178b47aa616b84dd17", ClientIP: "127.0.0.1", RequestID: "54d5f0bb9c330058c9957724c12704ce", Detail: "via=login reason=wrong_password"},
				{ID: "000660f0885a8444b577106ab42b98c1", OccurredMicros: 1795436056314948, Type: "key.rotated", ActorID: "", SubjectID: "", ClientIP: "", RequestID: "", Detail: "kid=732184b7c0680f87 algorithm=EdDSA origin=operator"},
			},
		},
	},
	"postgres": {
		migrated: []int64{1795436056515019, 1795436056607073, 1795436056622492, 1795436056631484, 1795436056635163},
		rows: fixtureRows{
			Users: []userRow{
				{ID: "6b042e1826d3d0870e84afa5", Name: "Imported Ivy", Email: "ivy@example.com", PasswordHash: "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy", Profiles: "ROLE_CUSTOMER", CreatedMicros: 1795436056779156, UpdatedMicros: 1795436056779156},
				{ID: "6b042e187aa7aad1d9bf14bc", Name: "Fixture Admin", Email: "admin@example.com", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$BF/c5lbAoA+3NVYXjiv7IQ$WWXzTEvLxCZb0P1iWYT/hxhSPR/UvfWORi2aVLREF8M", Profiles: "ROLE_ADMIN", CreatedMicros: 1795436056751226, UpdatedMicros: 1795436056751226},
				{ID: "6b042e1904293b541369043b", Name: "Grace Hopper", Email: "grace@example.com", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$QoR0AI651McpJSFkVn7AfA$078nzLU/om6Z3GcBkiCdTiEqBbuvQZZr6GlGuVcw2AI", Profiles: "ROLE_CUSTOMER", CreatedMicros: 1795436057146836, UpdatedMicros: 1795436057146836},
				{ID: "6b042e19792ba4f5f07e3824", Name: "Ada Lovelace", Email: "ada@example.com", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$Vkk/eg8ClfbK0/pI/VFP2Q$vrCglUwAb95t1wRkKI8jFE/CxNfv3jCOsM6YltoWiac", Profiles: "ROLE_CUSTOMER", CreatedMicros: 1795436057084077, UpdatedMicros: 1795436057084077},
			},
			Keys: []keyRow{
				{ID: "5ec32d9b9bf002b5", Purpose: "access-token", Algorithm: "EdDSA", Secret: unhex("302e020100300506032b6570042204200976c8c81cf01c105a8d0092ad57d4d09a0934c724d09eeb1e3368aa55928887"), CreatedMicros: 1795436057670989},
				{ID: "a7fe7eff49f2ffb3", Purpose: "access-token", Algorithm: "EdDSA", Secret: unhex("302e020100300506032b657004220420ee308a501352b1e1877fac9d9b2bbc0086a030e7b71deb91909a89d5dafee752"), CreatedMicros: 1795436056822692},
				{ID: "refresh-hmac-1", Purpose: "refresh-hmac", Algorithm: "HS256", Secret: unhex("df588d2c4271f7156c170adcac4f1aa21d61c9a4807b84b2b986f259457b6a63"), CreatedMicros: 1795436056825920},
			},
			Families: []refreshFamilyRow{
				{ID: "9e6a52f96355b4219e454f30e92f165e", UserID: "6b042e1904293b541369043b", CreatedMicros: 1795436057416574, ExpiresMicros: 1803212057416574, RevokedMicros: ptr[int64](1795436057481372)},
				{ID: "c0cd7f5cc5f0eeb843e2a96440fe5e8d", UserID: "6b042e187aa7aad1d9bf14bc", CreatedMicros: 1795436057167224, ExpiresMicros: 1803212057167224, RevokedMicros: nil},
				{ID: "f8fd9d40c85b7e7999e6d434fddc7068", UserID: "6b042e19792ba4f5f07e3824", CreatedMicros: 1795436057231356, ExpiresMicros: 1803212057231356, RevokedMicros: nil},
			},
			Tokens: []refreshTokenRow{
				{Hash: "27241301be552fcaea9f947f56c4f1eb4819ab8b3539d74150bf9b413fd84e9e", FamilyID: "9e6a52f96355b4219e454f30e92f165e", UserID: "6b042e1904293b541369043b", IssuedMicros: 1795436057416574, ExpiresMicros: 1798028057416574, UsedMicros: nil, SuccessorHash: nil},
				{Hash: "6faea66b5ab468d531e88bed72f25bad8897d057ab4f435a84a9339989cb9863", FamilyID: "c0cd7f5cc5f0eeb843e2a96440fe5e8d", UserID: "6b042e187aa7aad1d9bf14bc", IssuedMicros: 1795436057167224, ExpiresMicros: 1798028057167224, UsedMicros: nil, SuccessorHash: nil},
				{Hash: "a3cd223c65d4f10f7ec6960baca7cb4a87a02aba6a7b0267a683999a456c87ca", FamilyID: "f8fd9d40c85b7e7999e6d434fddc7068", UserID: "6b042e19792ba4f5f07e3824", IssuedMicros: 1795436057231356, ExpiresMicros: 1798028057231356, UsedMicros: ptr[int64](1795436057320418), SuccessorHash: ptr("df4631095f8ec38d434524134f030eb549b494e2ae36fc5afce7347be6b60f9d")},
				{Hash: "ac74d428535dd6eb3aac608f9c98c5c0aff726573c0cf245166ee08897fa429a", FamilyID: "f8fd9d40c85b7e7999e6d434fddc7068", UserID: "6b042e19792ba4f5f07e3824", IssuedMicros: 1795436057339578, ExpiresMicros: 1798028057339578, UsedMicros: nil, SuccessorHash: nil},
				{Hash: "df4631095f8ec38d434524134f030eb549b494e2ae36fc5afce7347be6b60f9d", FamilyID: "f8fd9d40c85b7e7999e6d434fddc7068", UserID: "6b042e19792ba4f5f07e3824", IssuedMicros: 1795436057320418, ExpiresMicros: 1798028057320418, UsedMicros: ptr[int64](1795436057339578), SuccessorHash: ptr("ac74d428535dd6eb3aac608f9c98c5c0aff726573c0cf245166ee08897fa429a")},
			},
			Attempts: []loginAttemptRow{
				{Email: "ivy@example.com", Failures: 1, LastFailureMicros: 1795436057635987},
			},
			Audit: []auditEventRow{
				{ID: "000660f088614a7443880068a19645c8", OccurredMicros: 1795436056758900, Type: "user.created", ActorID: "", SubjectID: "6b042e187aa7aad1d9bf14bc", ClientIP: "", RequestID: "", Detail: "profiles=ROLE_ADMIN origin=operator"},
				{ID: "000660f08861aa1caedae22a7b3c8b8b", OccurredMicros: 1795436056783388, Type: "user.created", ActorID: "", SubjectID: "6b042e1826d3d0870e84afa5", ClientIP: "", RequestID: "", Detail: "profiles=ROLE_CUSTOMER origin=import"},
				{ID: "000660f0886645ee840095cef0b792a2", OccurredMicros: 1795436057085422, Type: "user.created", ActorID: "", SubjectID: "6b042e19792ba4f5f07e3824", ClientIP: "127.0.0.1", RequestID: "7bda08d7d7b0cc341387a9fbb89feb14", Detail: "profiles=ROLE_CUSTOMER"},
				{ID: "000660f0886747e046bac7723b0af5ab", OccurredMicros: 1795436057151456, Type: "user.created", ActorID: "", SubjectID: "6b042e1904293b541369043b", ClientIP: "127.0.0.1", RequestID: "75a5a6e65427899ed4f193245d4a2eca", Detail: "profiles=ROLE_CUSTOMER"},
				{ID: "000660f088683aa9428f3c7abf4ad10e", OccurredMicros: 1795436057213609, Type: "login.succeeded", ActorID: "6b042e187aa7aad1d9bf14bc", SubjectID: "6b042e187aa7aad1d9bf14bc", ClientIP: "127.0.0.1", RequestID: "9a8bece55a4cf9023f012b87ca8f92a6", Detail: "via=login"},
				{ID: "000660f08869935180e5c47f600d41a6", OccurredMicros: 1795436057301841, Type: "login.succeeded", ActorID: "6b042e19792ba4f5f07e3824", SubjectID: "6b042e19792ba4f5f07e3824", ClientIP: "127.0.0.1", RequestID: "27f14b8da1ff7f064f23bae60b555450", Detail: "via=login"},
				{ID: "000660f0886c247f3909ed1fbf9037d6", OccurredMicros: 1795436057470079, Type: "login.succeeded", ActorID: "6b042e1904293b541369043b", SubjectID: "6b042e1904293b541369043b", ClientIP: "127.0.0.1", RequestID: "5964cc089c0cea3faed3d182a6ab3bfb", Detail: "via=login"},
				{ID: "000660f0886c53c7492a816e84f594ba", OccurredMicros: 1795436057482183, Type: "session.revoked", ActorID: "6b042e1904293b541369043b", SubjectID: "6b042e1904293b541369043b", ClientIP: "127.0.0.1", RequestID: "0397c606429e9a3472614f2d1057c352", Detail: "reason=logout family=9e6a52f96355b4219e454f30e92f165e"},
				{ID: "000660f0886eb1b0e8686d5035682ba9", OccurredMicros: 1795436057637296, Type: "login.failed", ActorID: "", SubjectID: "6b042e1826d3d0870e84afa5", ClientIP: "127.0.0.1", RequestID: "b4684203e9627e0668b203dd9b6afcf5", Detail: "via=login reason=wrong_password"},
				{ID: "000660f0886f44bc6512dd5bf79076b4", OccurredMicros: 1795436057674940, Type: "key.rotated", ActorID: "", SubjectID: "", ClientIP: "", RequestID: "", Detail: "kid=5ec32d9b9bf002b5 algorithm=EdDSA origin=operator"},
			},
		},
	},
}
